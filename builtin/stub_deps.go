package builtin

import (
	_ "github.com/JohannesKaufmann/html-to-markdown/v2"
	_ "golang.org/x/net/html/charset"
	_ "modernc.org/sqlite"
)
