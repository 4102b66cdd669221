package browser

import (
	"context"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// DisableCache makes the tab ignore the HTTP cache, as DevTools' "Disable cache" does, for a cold load; false uses
// it again.
func (b *Browser) DisableCache(disabled bool) {
	b.t.Helper()
	do(b, "set the cache disabled", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: disabled})
		return err
	}))
}

// OnNewDocument evaluates the script in every document the tab loads from now on, before the page's own scripts
// run, and whatever the page's Content-Security-Policy says: a measurement can observe a page from its first byte
// without changing the page.
func (b *Browser) OnNewDocument(js string) {
	b.t.Helper()
	do(b, "add a script for new documents", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: js})
		return err
	}))
}
