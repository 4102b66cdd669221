//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFilesRefusals(t *testing.T) {
	outside := fileTree(t, map[string]string{"secret.txt": "secret\n", "dir/s.txt": "secret\n"})
	dir := fileTree(t, map[string]string{
		"big.txt":  strings.Repeat("a", 2048),
		"bin.dat":  "text\x00more",
		"latin1":   "caf\xe9\n",
		"ok.txt":   "fine\n",
		"sub/a.md": "a\n",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt")))
	must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(dir, "escape-dir")))
	must(os.Symlink("ok.txt", filepath.Join(dir, "inside-link.txt")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	must(os.Symlink(filepath.Join(outside, "missing"), filepath.Join(dir, "dangling")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	tools := fileTools(t, FilesOptions{Roots: []string{dir}, MaxFileBytes: 1024})
	roots := "(" + dir + ")"

	tests := []struct {
		tool, args, want string
	}{
		{"read_file", `{"path":"../secret.txt"}`, "../secret.txt is outside the allowed roots " + roots},
		{"read_file", `{"path":"sub/../../x"}`, "sub/../../x is outside the allowed roots " + roots},
		{"read_file", `{"path":"` + filepath.Join(outside, "secret.txt") + `"}`, filepath.Join(outside, "secret.txt") + " is outside the allowed roots " + roots},
		{"read_file", `{"path":"/etc/passwd"}`, "/etc/passwd is outside the allowed roots " + roots},
		{"read_file", `{"path":"escape.txt"}`, "escape.txt leads outside the allowed roots " + roots + " through a symbolic link"},
		{"read_file", `{"path":"escape-dir/s.txt"}`, "escape-dir/s.txt leads outside the allowed roots " + roots + " through a symbolic link"},
		{"list_dir", `{"path":"escape-dir"}`, "escape-dir leads outside the allowed roots " + roots + " through a symbolic link"},
		{"search_files", `{"pattern":"secret","path":"escape-dir"}`, "escape-dir leads outside the allowed roots " + roots + " through a symbolic link"},
		{"read_file", `{"path":"zero"}`, "zero leads outside the allowed roots " + roots + " through a symbolic link"},
		{"read_file", `{"path":"dangling"}`, "dangling leads outside the allowed roots " + roots + " through a symbolic link"},
		{"read_file", `{"path":"fifo"}`, "fifo is a named pipe, not a file that can be read"},
		{"read_file", `{"path":"big.txt"}`, "big.txt is 2.0 KiB, over the 1.0 KiB limit of the file tools"},
		{"read_file", `{"path":"bin.dat"}`, "bin.dat is a binary file (9 bytes), not text: read_file reads text files only"},
		{"read_file", `{"path":"latin1"}`, "latin1 is a binary file (5 bytes), not text"},
		{"read_file", `{"path":"missing.txt"}`, "missing.txt does not exist"},
		{"read_file", `{"path":"sub"}`, "sub is a directory; list it with list_dir"},
		{"read_file", `{"path":""}`, `Invalid arguments: path is required; for example {"path": "README.md"}`},
		{"read_file", `{"path":"ok.txt","offset":0}`, "Invalid arguments: offset is a line number, from 1, not 0"},
		{"read_file", `{"path":"ok.txt","offset":5}`, "ok.txt has 1 lines; offset 5 is past its end"},
		{"read_file", `{"path":"ok.txt","limit":-1}`, "Invalid arguments: limit is a number of lines, at least 1, not -1"},
		{"read_file", `{"path":7}`, "Invalid arguments: path must be a string, not number"},
		{"list_dir", `{"path":"../"}`, "../ is outside the allowed roots " + roots},
		{"list_dir", `{"path":"ok.txt"}`, "ok.txt is a file, not a directory; read it with read_file"},
		{"list_dir", `{"path":"fifo"}`, "fifo is a named pipe, not a directory"}, // never opened: it would block
		{"list_dir", `{"path":"zero"}`, "zero leads outside the allowed roots " + roots + " through a symbolic link"},
		{"list_dir", `{"path":"nowhere"}`, "nowhere does not exist"},
		{"search_files", `{"pattern":"a","path":"/tmp/../etc"}`, "/etc is outside the allowed roots " + roots},
		{"search_files", `{"pattern":"(unclosed"}`, "Invalid pattern \"(unclosed\": missing closing ): `(unclosed`"},
		{"search_files", `{"pattern":"a","glob":"[x"}`, `Invalid glob "[x": a file name pattern such as *.go or report-??.md`},
		{"search_files", `{"pattern":""}`, `Invalid arguments: pattern is required`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			res := callTool(t, tools[tt.tool], tt.args)
			if !res.IsError || !strings.HasPrefix(res.Text, tt.want) {
				t.Errorf("%q (error %v)\nwant %q", res.Text, res.IsError, tt.want)
			}
			if strings.Contains(res.Text, "secret\n") {
				t.Error("the refused file's content reached the result")
			}
			// Where a link leads out of the roots is not said, unless the model gave that path itself.
			if !strings.Contains(tt.args, outside) && (strings.Contains(res.Text, outside) || strings.Contains(res.Text, "/dev/zero")) {
				t.Error("the result names a place outside the roots")
			}
		})
	}

	// A symlink that stays inside the root is followed.
	if res := callTool(t, tools["read_file"], `{"path":"inside-link.txt"}`); res.IsError || !strings.Contains(res.Text, "1\tfine") {
		t.Errorf("inside link: %q", res.Text)
	}
	// search_files goes through none of it: no link followed, binaries and big files skipped, no pipe opened.
	res := callTool(t, tools["search_files"], `{"pattern":"secret|more|caf|a{100}"}`)
	if res.IsError || !strings.HasPrefix(res.Text, `No line matches`) {
		t.Errorf("search over refused files: %q", res.Text)
	}
}
