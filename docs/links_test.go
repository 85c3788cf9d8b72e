// Package docs holds the user documentation (Markdown) and a test that every
// relative link in the repository's own Markdown pages resolves: to a file or
// folder that exists and, for a link with a #fragment into a Markdown page, to
// a heading of that page.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// skipDirs are folders whose Markdown is not the repository's own: vendored
// upstream code (whose SEPP-PATCH.md files are checked all the same), build
// output and installed packages.
var skipDirs = map[string]bool{
	".git": true, ".cache": true, "node_modules": true, "target": true, "dist": true,
}

// pages lists the Markdown files of the repository rooted at root, as paths
// relative to it, sorted.
func pages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		if strings.HasPrefix(rel, "third_party"+string(filepath.Separator)) && d.Name() != "SEPP-PATCH.md" {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`]*`")
	// A link or image: [text](target) or [text](target "title").
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	notSlug = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one relative link of a page.
type link struct {
	line   int
	target string
}

// scan returns a page's relative links and the anchors of its headings,
// leaving out fenced code blocks and inline code.
func scan(text string) (links []link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			a := slug(m[1])
			if n := seen[a]; n > 0 {
				anchors[a+"-"+itoa(n)] = true
			} else {
				anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue // http:, https:, mailto:
			}
			links = append(links, link{line: i + 1, target: target})
		}
	}
	return links, anchors
}

// slug is the anchor a heading gets on GitHub: lower case, punctuation
// dropped, spaces turned into hyphens.
func slug(h string) string {
	h = inlineCode.ReplaceAllStringFunc(h, func(s string) string { return strings.Trim(s, "`") })
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	h = notSlug.ReplaceAllString(strings.ToLower(h), "")
	return strings.ReplaceAll(h, " ", "-")
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := pages(t, root)
	anchorsOf := map[string]map[string]bool{}
	linksOf := map[string][]link{}
	for _, p := range files {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		linksOf[p], anchorsOf[p] = scan(string(b))
	}
	checked := 0
	for _, p := range files {
		for _, l := range linksOf[p] {
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := p // a bare #fragment points into the page itself
			if path != "" {
				target = filepath.Join(filepath.Dir(p), filepath.FromSlash(path))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", p, l.line, l.target, filepath.ToSlash(target))
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			anchors, ok := anchorsOf[target]
			if !ok {
				continue // a page outside the checked set (upstream code)
			}
			if !anchors[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", p, l.line, l.target, filepath.ToSlash(target), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no relative link found in %d pages: the scan is broken", len(files))
	}
	t.Logf("%d relative links in %d pages", checked, len(files))
}

func TestScanFindsLinksAndAnchors(t *testing.T) {
	page := "# Periodic schedules\n\n" +
		"## Exactly once, and what a failover looks like\n" +
		"## Notes\n## Notes\n" +
		"See [the rules](schedules.md#how-ticks-are-computed), ![a chart](queue.png \"Queue\"),\n" +
		"[the site](https://example.com) and `[code](not-a-link.md)`.\n" +
		"```\n[fenced](not-a-link-either.md)\n```\n"
	links, anchors := scan(page)
	want := []link{{6, "schedules.md#how-ticks-are-computed"}, {6, "queue.png"}}
	if len(links) != len(want) {
		t.Fatalf("links = %v, want %v", links, want)
	}
	for i := range want {
		if links[i] != want[i] {
			t.Errorf("link %d = %v, want %v", i, links[i], want[i])
		}
	}
	for _, a := range []string{"periodic-schedules", "exactly-once-and-what-a-failover-looks-like", "notes", "notes-1"} {
		if !anchors[a] {
			t.Errorf("anchor %q missing from %v", a, anchors)
		}
	}
}

// TestIndexListsEveryPage: docs/README.md is the index, so a page it does not
// link is a page nobody finds.
func TestIndexListsEveryPage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	links, _ := scan(string(b))
	listed := map[string]bool{}
	for _, l := range links {
		path, _, _ := strings.Cut(l.target, "#")
		listed[path] = true
	}
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n != "README.md" && !listed[n] {
			t.Errorf("docs/%s is not linked from docs/README.md", n)
		}
	}
}
