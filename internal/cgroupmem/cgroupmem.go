// Package cgroupmem finds the memory limit the kernel enforces on this
// process: the smallest limit of the cgroup the process runs in and of every
// ancestor of it, for cgroup v1 and v2.
//
// Reading only /sys/fs/cgroup/memory.max is not enough. That file is the
// limit of the cgroup mounted at /sys/fs/cgroup, which is the process's own
// cgroup only inside a container with a private cgroup namespace. A process
// that systemd starts with MemoryMax= (or that a supervisor puts in a
// cgroup of its own) runs in /system.slice/sepp.service, and the root's file
// says "max" or does not exist: the node would size its memory budget from
// the machine's physical memory and be killed by the kernel long before
// reaching it. The cgroup a process runs in is named in /proc/self/cgroup;
// where that hierarchy is mounted is in /proc/self/mountinfo; and since a
// parent's limit bounds all its children, the limit that applies is the
// smallest along the path from the process's cgroup up to the mount.
package cgroupmem

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Limit is a memory limit found in a cgroup file.
type Limit struct {
	// Bytes is the limit.
	Bytes int64
	// File is the cgroup file that set it, as a path from the file system's
	// root (e.g. "sys/fs/cgroup/system.slice/sepp.service/memory.max").
	File string
}

// v1Unlimited is the smallest value cgroup v1 uses for "no limit": it
// reports PAGE_COUNTER_MAX pages in bytes, a page-rounded number near 2^63.
const v1Unlimited = 1 << 60

// Find returns the smallest memory limit that applies to the process whose
// /proc/<pid>/cgroup and mountinfo are proc+"/cgroup" and
// proc+"/mountinfo" in fsys (a file system rooted at "/", as os.DirFS("/")
// gives; proc is e.g. "proc/self"). It looks at cgroup v2's memory.max and
// memory.high (above memory.high the kernel throttles the process and
// reclaims hard) and at cgroup v1's memory.limit_in_bytes, in the process's
// cgroup and each ancestor up to the hierarchy's mount. false when no
// hierarchy with a memory controller is mounted or none of its files set a
// limit.
func Find(fsys fs.FS, proc string) (Limit, bool) {
	membership, err := fs.ReadFile(fsys, path.Join(proc, "cgroup"))
	if err != nil {
		return Limit{}, false
	}
	mountinfo, err := fs.ReadFile(fsys, path.Join(proc, "mountinfo"))
	if err != nil {
		return Limit{}, false
	}
	v2Path, v1Path := parseMembership(membership)
	mounts := parseMountinfo(mountinfo)
	var best Limit
	found := false
	consider := func(l Limit, ok bool) {
		if ok && (!found || l.Bytes < best.Bytes) {
			best, found = l, true
		}
	}
	for _, m := range mounts {
		switch {
		case m.fsType == "cgroup2" && v2Path != "":
			consider(walk(fsys, m, v2Path, []string{"memory.max", "memory.high"}))
		case m.fsType == "cgroup" && m.memory && v1Path != "":
			consider(walk(fsys, m, v1Path, []string{"memory.limit_in_bytes"}))
		}
	}
	return best, found
}

// parseMembership reads /proc/<pid>/cgroup: "hierarchy-id:controllers:path"
// lines. The v2 line is "0::path"; the v1 line that matters lists the
// memory controller.
func parseMembership(data []byte) (v2Path, v1Path string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		if id == "0" && controllers == "" {
			v2Path = p
			continue
		}
		for _, c := range strings.Split(controllers, ",") {
			if c == "memory" {
				v1Path = p
			}
		}
	}
	return v2Path, v1Path
}

// mount is one cgroup hierarchy's mount.
type mount struct {
	root   string // the cgroup the mount shows at its mount point
	point  string // where it is mounted, without the leading "/"
	fsType string // "cgroup2" or "cgroup"
	memory bool   // a v1 mount that holds the memory controller
}

// parseMountinfo picks the cgroup mounts out of /proc/<pid>/mountinfo:
// "id parent major:minor root mount-point options [optional...] - fstype
// source super-options".
func parseMountinfo(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 || (g[0] != "cgroup2" && g[0] != "cgroup") {
			continue
		}
		m := mount{root: unescape(f[3]), point: strings.TrimPrefix(path.Clean(unescape(f[4])), "/"), fsType: g[0]}
		if m.fsType == "cgroup" {
			if len(g) < 3 {
				continue
			}
			for _, o := range strings.Split(g[2], ",") {
				if o == "memory" {
					m.memory = true
				}
			}
			if !m.memory {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// walk reads files in the process's cgroup directory under mount m and in
// each parent directory up to the mount point, and returns the smallest
// limit among them. A cgroup path outside the mount's root (a mount of
// another namespace's subtree) leaves only the mount point to read.
func walk(fsys fs.FS, m mount, cgroupPath string, files []string) (Limit, bool) {
	rel, root := path.Clean(cgroupPath), path.Clean(m.root)
	if root != "/" {
		var ok bool
		rel, ok = strings.CutPrefix(rel, root)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			rel = ""
		}
	}
	dir := path.Join(m.point, rel)
	var best Limit
	found := false
	for {
		for _, name := range files {
			file := path.Join(dir, name)
			if v, ok := readLimit(fsys, file); ok && (!found || v < best.Bytes) {
				best, found = Limit{Bytes: v, File: file}, true
			}
		}
		if dir == m.point || dir == "." || dir == "/" || !strings.HasPrefix(dir, m.point) {
			return best, found
		}
		dir = path.Dir(dir)
	}
}

// readLimit parses a limit file: a number of bytes, or "max" (v2) or a
// number at or above v1Unlimited (v1) for none.
func readLimit(fsys fs.FS, file string) (int64, bool) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(data))
	if v == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n >= v1Unlimited {
		return 0, false
	}
	return n, true
}
