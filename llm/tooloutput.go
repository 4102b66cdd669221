package llm

import (
	"regexp"
	"strings"
)

// A tool message's content reaches the model between tags that carry an id the tool cannot know (the orchestrator
// draws it for each run and names it in the system prompt):
//
//	<tool_output id="ID" name="TOOL">
//	the result
//	</tool_output id="ID">
//
// Only the closing tag with the id ends the block, so a result that writes a closing tag in any spelling (other
// spaces, other characters that look alike, HTML escapes) cannot end it early: it would have to guess the id. The
// plain closing tag is escaped besides, for a model that does not heed the id.
const toolOutputTag = "tool_output"

// toolOutputCloser finds what could pass for a closing tag inside a result, to escape it.
var toolOutputCloser = regexp.MustCompile(`(?i)<\s*/\s*tool_output`)

// WrapToolOutput returns content between the opening and closing tags of id, the opening tag naming the tool when
// name is given (the caller checks that name needs no escaping). A closing tag inside content is escaped
// ("<\/tool_output").
func WrapToolOutput(id, name, content string) string {
	var b strings.Builder
	b.Grow(len(content) + 2*len(id) + len(name) + 64)
	b.WriteString(ToolOutputOpen(id, name))
	b.WriteByte('\n')
	b.WriteString(toolOutputCloser.ReplaceAllString(content, `<\/tool_output`))
	b.WriteByte('\n')
	b.WriteString(ToolOutputClose(id))
	return b.String()
}

// ToolOutputOpen is the opening tag WrapToolOutput writes.
func ToolOutputOpen(id, name string) string {
	open := "<" + toolOutputTag + ` id="` + id + `"`
	if name != "" {
		open += ` name="` + name + `"`
	}
	return open + ">"
}

// ToolOutputClose is the closing tag WrapToolOutput writes: the only one that ends the block of id.
func ToolOutputClose(id string) string {
	return "</" + toolOutputTag + ` id="` + id + `">`
}

// UnwrapToolOutput returns what WrapToolOutput put between its tags (with its escapes), and whether content was
// wrapped so.
func UnwrapToolOutput(content string) (string, bool) {
	first, rest, ok := strings.Cut(content, "\n")
	attrs, opened := strings.CutPrefix(first, "<"+toolOutputTag+` id="`)
	if !ok || !opened || !strings.HasSuffix(first, `">`) {
		return content, false
	}
	id, _, _ := strings.Cut(attrs, `"`)
	inner, ok := strings.CutSuffix(rest, "\n"+ToolOutputClose(id))
	if !ok {
		return content, false
	}
	return inner, true
}
