// The MCP TypeScript SDK pinned in testdata/peers. ES modules do not search NODE_PATH and testdata/peers is not
// an ancestor of this directory, so the SDK is loaded through a require anchored there, by its package exports.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../peers/package.json', import.meta.url));

export const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
export const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
export const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
export const { UnauthorizedError } = require('@modelcontextprotocol/sdk/client/auth.js');
export const { ClientCredentialsProvider } = require('@modelcontextprotocol/sdk/client/auth-extensions.js');
