package cgroupmem

import (
	"testing"
	"testing/fstest"
)

// Mount lines as /proc/self/mountinfo shows them on the layouts sepp meets.
const (
	mountV2         = "30 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	mountV1Memory   = "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	mountV1CPU      = "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	mountUnified    = "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	mountRootfs     = "22 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw\n"
	mountV1InDocker = "50 30 0:31 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
)

func proc(membership, mountinfo string, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":    {Data: []byte(membership)},
		"proc/self/mountinfo": {Data: []byte(mountinfo)},
	}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data + "\n")}
	}
	return fsys
}

func TestFind(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		fsys      fstest.MapFS
		wantBytes int64
		wantFile  string // "" when no limit applies
	}{
		{
			name: "v2 systemd service with MemoryMax",
			fsys: proc("0::/system.slice/sepp.service\n", mountRootfs+mountV2, map[string]string{
				"sys/fs/cgroup/system.slice/memory.max":               "max",
				"sys/fs/cgroup/system.slice/sepp.service/memory.max":  "536870912",
				"sys/fs/cgroup/system.slice/sepp.service/memory.high": "max",
			}),
			wantBytes: 512 * mib, wantFile: "sys/fs/cgroup/system.slice/sepp.service/memory.max",
		},
		{
			name: "v2 ancestor's limit below the process's own",
			fsys: proc("0::/sepp.slice/node-2.service\n", mountV2, map[string]string{
				"sys/fs/cgroup/sepp.slice/memory.max":                "268435456",
				"sys/fs/cgroup/sepp.slice/node-2.service/memory.max": "536870912",
			}),
			wantBytes: 256 * mib, wantFile: "sys/fs/cgroup/sepp.slice/memory.max",
		},
		{
			name: "v2 memory.high below memory.max",
			fsys: proc("0::/user.slice/sepp.scope\n", mountV2, map[string]string{
				"sys/fs/cgroup/user.slice/sepp.scope/memory.max":  "1073741824",
				"sys/fs/cgroup/user.slice/sepp.scope/memory.high": "805306368",
			}),
			wantBytes: 768 * mib, wantFile: "sys/fs/cgroup/user.slice/sepp.scope/memory.high",
		},
		{
			name: "v2 container with its own cgroup namespace",
			fsys: proc("0::/\n", mountV2, map[string]string{
				"sys/fs/cgroup/memory.max": "268435456",
			}),
			wantBytes: 256 * mib, wantFile: "sys/fs/cgroup/memory.max",
		},
		{
			name: "v2 no limit anywhere",
			fsys: proc("0::/system.slice/sepp.service\n", mountV2, map[string]string{
				"sys/fs/cgroup/system.slice/memory.max":              "max",
				"sys/fs/cgroup/system.slice/sepp.service/memory.max": "max",
			}),
		},
		{
			name: "v1 hybrid host: memory on v1, unified v2 without it",
			fsys: proc("9:name=systemd:/\n4:memory:/process_api/4d55\n1:cpu:/\n0::/\n",
				mountRootfs+mountV1CPU+mountV1Memory+mountUnified, map[string]string{
					"sys/fs/cgroup/memory/memory.limit_in_bytes":                  "9223372036854771712",
					"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":      "1073741824",
					"sys/fs/cgroup/memory/process_api/4d55/memory.limit_in_bytes": "9223372036854771712",
				}),
			wantBytes: 1024 * mib, wantFile: "sys/fs/cgroup/memory/process_api/memory.limit_in_bytes",
		},
		{
			name: "v1 own cgroup smaller than its parent",
			fsys: proc("4:memory:/sepp/node-1\n", mountV1Memory, map[string]string{
				"sys/fs/cgroup/memory/sepp/memory.limit_in_bytes":        "1073741824",
				"sys/fs/cgroup/memory/sepp/node-1/memory.limit_in_bytes": "536870912",
			}),
			wantBytes: 512 * mib, wantFile: "sys/fs/cgroup/memory/sepp/node-1/memory.limit_in_bytes",
		},
		{
			name: "v1 inside Docker without a cgroup namespace: the mount shows the container's cgroup",
			fsys: proc("4:memory:/docker/0123abcd\n", mountV1InDocker, map[string]string{
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456",
			}),
			wantBytes: 256 * mib, wantFile: "sys/fs/cgroup/memory/memory.limit_in_bytes",
		},
		{
			name: "v1 memory controller shared with cpu in one mount",
			fsys: proc("5:cpu,memory:/svc\n", "34 30 0:31 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup rw,cpu,memory\n", map[string]string{
				"sys/fs/cgroup/cpu,memory/svc/memory.limit_in_bytes": "134217728",
			}),
			wantBytes: 128 * mib, wantFile: "sys/fs/cgroup/cpu,memory/svc/memory.limit_in_bytes",
		},
		{
			name: "mount point with an escaped space",
			fsys: proc("0::/a\n", `30 22 0:27 / /sys/fs/cgroup\040v2 rw - cgroup2 cgroup2 rw`+"\n", map[string]string{
				"sys/fs/cgroup v2/a/memory.max": "268435456",
			}),
			wantBytes: 256 * mib, wantFile: "sys/fs/cgroup v2/a/memory.max",
		},
		{
			name: "garbage in a limit file is no limit",
			fsys: proc("0::/a\n", mountV2, map[string]string{
				"sys/fs/cgroup/a/memory.max": "lots",
			}),
		},
		{
			name: "no cgroup mounted",
			fsys: proc("0::/a\n", mountRootfs, map[string]string{
				"sys/fs/cgroup/a/memory.max": "268435456",
			}),
		},
		{
			name: "no /proc (not Linux)",
			fsys: fstest.MapFS{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Find(tc.fsys, "proc/self")
			if tc.wantFile == "" {
				if ok {
					t.Fatalf("Find = %+v, want no limit", got)
				}
				return
			}
			if !ok || got.Bytes != tc.wantBytes || got.File != tc.wantFile {
				t.Fatalf("Find = %+v, %v; want %d bytes from %s", got, ok, tc.wantBytes, tc.wantFile)
			}
		})
	}
}

func FuzzFind(f *testing.F) {
	f.Add("0::/system.slice/sepp.service\n", mountV2, "536870912")
	f.Add("4:memory:/docker/0123abcd\n", mountV1InDocker, "268435456")
	f.Fuzz(func(t *testing.T, membership, mountinfo, limit string) {
		fsys := proc(membership, mountinfo, map[string]string{
			"sys/fs/cgroup/system.slice/sepp.service/memory.max": limit,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":         limit,
		})
		if l, ok := Find(fsys, "proc/self"); ok && (l.Bytes <= 0 || l.File == "") {
			t.Fatalf("Find = %+v: a limit must be positive and name its file", l)
		}
	})
}
