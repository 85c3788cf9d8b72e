package docs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeMarker, on its own line in a page, says the fenced block after it is
// a copy of a file the tests run (path from the repository's root), or of
// the region of it between the lines "docs:begin NAME" and "docs:end NAME"
// (path#NAME): so a page's examples are the ones CI runs, and cannot drift
// from them.
var updateIncludes = flag.Bool("update-includes", false, "copy the included code into the pages again")

var codeMarker = regexp.MustCompile(`^<!-- code: ([^ #]+)(?:#([\w-]+))? -->$`)

func TestIncludedCodeIsWhatTheTestsRun(t *testing.T) {
	root := filepath.Join("..")
	found := 0
	for _, page := range pages(t, root) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		changed := false
		for i := 0; i < len(lines); i++ {
			m := codeMarker.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			found++
			block, start, end, ok := fencedBlockAfter(lines, i+1)
			if !ok {
				t.Errorf("%s:%d: no fenced code block follows %q", page, i+1, lines[i])
				continue
			}
			want, err := sourceCode(filepath.Join(root, m[1]), m[2])
			if err != nil {
				t.Errorf("%s:%d: %v", page, i+1, err)
				continue
			}
			if block != want && *updateIncludes {
				lines = append(lines[:start+1], append(strings.Split(want, "\n"), lines[end:]...)...)
				changed = true
				continue
			}
			if block != want {
				t.Errorf("%s:%d: the block differs from %s (go test ./docs -run TestIncludedCode -args -update-includes copies it again):\n--- page\n%s\n--- %s\n%s", page, i+1, lines[i][len("<!-- code: "):len(lines[i])-len(" -->")], block, m[1], want)
			}
		}
		if changed {
			if err := os.WriteFile(filepath.Join(root, page), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if found == 0 {
		t.Fatal("no page includes code: the pattern or the pages changed")
	}
}

// fencedBlockAfter returns the body of the ``` block that starts at line
// from (blank lines before it allowed), with the indexes of its opening and
// closing fence lines.
func fencedBlockAfter(lines []string, from int) (body string, start, end int, ok bool) {
	for from < len(lines) && strings.TrimSpace(lines[from]) == "" {
		from++
	}
	if from >= len(lines) || !strings.HasPrefix(lines[from], "```") {
		return "", 0, 0, false
	}
	for end := from + 1; end < len(lines); end++ {
		if lines[end] == "```" {
			return strings.Join(lines[from+1:end], "\n"), from, end, true
		}
	}
	return "", 0, 0, false
}

// sourceCode is path's content, or its region name, without the blank lines
// at either end.
func sourceCode(path, region string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text := string(data)
	if region != "" {
		begin, end := "docs:begin "+region+"\n", "docs:end "+region
		i := strings.Index(text, begin)
		j := strings.Index(text, end)
		if i < 0 || j < i {
			return "", &os.PathError{Op: "region " + region, Path: path, Err: os.ErrNotExist}
		}
		text = text[i+len(begin) : j]
		text = text[:strings.LastIndex(text, "\n")+1] // drop the end marker's comment opener
	}
	return strings.Trim(text, "\n"), nil
}
