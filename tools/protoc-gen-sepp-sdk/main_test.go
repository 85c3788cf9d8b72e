package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/compiler/protogen"

	"github.com/sepp-io/sepp/tools/internal/plugintest"
)

// The repository's public protos and the SDKs, from tools/protoc-gen-sepp-sdk.
const (
	protoRoot = "../../proto"
	sdkRoot   = "../../sdk"
	// The Go client's directory, the out directory of lang=go.
	clientRoot = "../../client"
)

// publicProtos are the files of package sepp.v1, the plugin's input.
func publicProtos(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(protoRoot, "sepp/v1/*.proto"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no protos under %s: %v", protoRoot, err)
	}
	for i, p := range paths {
		paths[i] = strings.TrimPrefix(filepath.ToSlash(p), protoRoot+"/")
	}
	sort.Strings(paths)
	return paths
}

// TestCommittedOutputIsCurrent: what the plugin makes of the protos as
// they are is what the SDKs hold (make verify checks the same with git
// diff after make generate).
func TestCommittedOutputIsCurrent(t *testing.T) {
	got, err := runPlugin(t, nil, publicProtos(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("%d files written, want 9: %v", len(got), keys(got))
	}
	for name, text := range got {
		committed, err := os.ReadFile(filepath.Join(sdkRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, []byte(text)) {
			t.Errorf("sdk/%s is stale: run make generate", name)
		}
	}
	got, err = runPluginWith(t, "lang=go", nil, publicProtos(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[goFile] == "" || got[jobGoFile] == "" || got[enqGoFile] == "" {
		t.Fatalf("lang=go wrote %v, want %s, %s and %s", keys(got), goFile, jobGoFile, enqGoFile)
	}
	for name, text := range got {
		committed, err := os.ReadFile(filepath.Join(clientRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, []byte(text)) {
			t.Errorf("client/%s is stale: run make generate", name)
		}
	}
}

// TestUnknownOption: an option but lang=go is refused, not ignored.
func TestUnknownOption(t *testing.T) {
	var p params
	for _, opt := range [][2]string{{"lang", "java"}, {"out", "go"}} {
		if err := p.set(opt[0], opt[1]); err == nil {
			t.Errorf("option %s=%s accepted", opt[0], opt[1])
		}
	}
}

// TestNewSettingReachesEverySDK adds throwaway settings of every kind to a
// copy of the protos, one of them (widget_label) left out of QueueLimits,
// and checks that each SDK's output gains each with its native type, in
// its conversions both ways and, but for widget_label, in the effective
// settings: what adding a QueueSettings field and running make generate
// does, with no hand edit in the SDKs.
func TestNewSettingReachesEverySDK(t *testing.T) {
	admin := readProto(t, "sepp/v1/admin_service.proto")
	queue := readProto(t, "sepp/v1/queue_service.proto")
	admin = insertAtEnd(t, admin, "message QueueSettings {\n", `  // Throwaway: how many widgets
  // at most.
  optional uint64 max_widgets = 900;
  optional int64 widget_pause_ms = 901;
  optional string widget_label = 902;
  optional bool widget_strict = 903;
  optional WidgetMode widget_mode = 904;
  optional int32 widget_offset = 905;
  optional sint64 widget_skew = 906;
`)
	admin += `
// WidgetMode is a throwaway enum.
enum WidgetMode {
  WIDGET_MODE_UNSPECIFIED = 0;
  // Quick.
  WIDGET_MODE_FAST = 1;
  WIDGET_MODE_SAFE_AND_SLOW = 2;
}
`
	queue = insertAtEnd(t, queue, "message QueueLimits {\n", `  uint64 max_widgets = 900;
  int64 widget_pause_ms = 901;
  bool widget_strict = 903;
  WidgetMode widget_mode = 904;
  int32 widget_offset = 905;
  sint64 widget_skew = 906;
`)
	// QueueLimits names WidgetMode, declared in admin_service.proto, which
	// imports queue_service.proto: declare it in types.proto instead, which
	// both import.
	types := readProto(t, "sepp/v1/types.proto")
	i := strings.Index(admin, "\n// WidgetMode is")
	types += admin[i:]
	admin = admin[:i]

	// Both runs: the SDKs' files, and (lang=go) the Go client's.
	before, after := map[string]string{}, map[string]string{}
	for _, param := range []string{"", "lang=go"} {
		b, err := runPluginWith(t, param, nil, publicProtos(t))
		if err != nil {
			t.Fatal(err)
		}
		a, err := runPluginWith(t, param, map[string]string{
			"sepp/v1/admin_service.proto": admin,
			"sepp/v1/queue_service.proto": queue,
			"sepp/v1/types.proto":         types,
		}, publicProtos(t))
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range b {
			before[name] = text
		}
		for name, text := range a {
			after[name] = text
		}
	}
	// gofmt aligns a struct's fields and a literal's values by the longest
	// name among them, so a new field may respace old lines: the Go output
	// is compared with every run of blanks as one space.
	before[goFile], after[goFile] = collapseBlanks(before[goFile]), collapseBlanks(after[goFile])

	want := map[string][]string{
		tsFile: {
			"  /**\n   * Throwaway: how many widgets\n   * at most.\n   */\n  maxWidgets?: number;\n",
			"  widgetPauseMs?: number;\n",
			"  widgetLabel?: string;\n",
			"  widgetStrict?: boolean;\n",
			"  widgetMode?: \"fast\" | \"safe_and_slow\";\n",
			"  widgetOffset?: number;\n",
			"  widgetSkew?: number;\n",
			`export type EffectiveQueueSettings = Required<Omit<QueueSettings, "tags" | "widgetLabel">>;`,
			"  widgetMode: true,\n",
			`import type { RetryBackoffJSON, WidgetModeJSON } from "./sepp/v1/types_json.js";`,
			"function widgetModeToJSON(field: string, v: \"fast\" | \"safe_and_slow\"): WidgetModeJSON {\n",
			"    case \"safe_and_slow\":\n      return \"WIDGET_MODE_SAFE_AND_SLOW\";\n",
			"    case \"WIDGET_MODE_SAFE_AND_SLOW\":\n    case 2:\n      return \"safe_and_slow\";\n  }\n  return \"fast\";\n",
			`  if (s.maxWidgets !== undefined) m.maxWidgets = whole("maxWidgets", s.maxWidgets);`,
			`  if (s.widgetPauseMs !== undefined) m.widgetPauseMs = whole("widgetPauseMs", s.widgetPauseMs);`,
			`  if (s.widgetLabel !== undefined) m.widgetLabel = s.widgetLabel;`,
			`  if (s.widgetMode !== undefined) m.widgetMode = widgetModeToJSON("widgetMode", s.widgetMode);`,
			`  if (s.widgetOffset !== undefined) m.widgetOffset = s.widgetOffset;`,
			`  if (s.widgetSkew !== undefined) m.widgetSkew = safeInteger("widgetSkew", s.widgetSkew);`,
			"function safeInteger(field: string, v: number): string {\n",
			`  if (m.widgetStrict !== undefined && m.widgetStrict !== null) s.widgetStrict = m.widgetStrict === true;`,
			`  if (m.widgetLabel !== undefined && m.widgetLabel !== null) s.widgetLabel = str(m.widgetLabel);`,
			"    maxWidgets: num(l.maxWidgets),\n",
			"    widgetStrict: l.widgetStrict === true,\n",
			"    widgetMode: widgetModeFromJSON(l.widgetMode),\n",
		},
		pythonFile: {
			"    #: Throwaway: how many widgets\n    #: at most.\n    max_widgets: Optional[int] = None\n",
			"    widget_pause: Optional[timedelta] = None\n",
			"    widget_label: Optional[str] = None\n",
			"    widget_strict: Optional[bool] = None\n",
			"    widget_mode: Optional[str] = None\n",
			"    widget_offset: Optional[int] = None\n",
			"    widget_skew: Optional[int] = None\n",
			"_WIDGET_MODE_VALUES: dict[str, types_pb2.WidgetMode] = {\n" +
				"    \"fast\": types_pb2.WIDGET_MODE_FAST,\n    \"safe_and_slow\": types_pb2.WIDGET_MODE_SAFE_AND_SLOW,\n}\n",
			"            m.widget_pause_ms = self.widget_pause // _MS\n",
			"            if self.widget_mode not in _WIDGET_MODE_VALUES:\n",
			"            m.widget_label = self.widget_label\n",
			"            widget_pause=m.widget_pause_ms * _MS if m.HasField(\"widget_pause_ms\") else None,\n",
			"            widget_mode=_WIDGET_MODE_NAMES.get(m.widget_mode, \"fast\") if m.HasField(\"widget_mode\") else None,\n",
			"            max_widgets=m.max_widgets,\n",
			"            widget_pause=m.widget_pause_ms * _MS,\n",
			"        but tags, widget_label.\"\"\"\n",
		},
		rustFile: {
			"    /// Throwaway: how many widgets\n    /// at most.\n    pub max_widgets: Option<u64>,\n",
			"    pub widget_pause: Option<Duration>,\n",
			"    pub widget_label: Option<String>,\n",
			"    pub widget_strict: Option<bool>,\n",
			"    pub widget_mode: Option<WidgetMode>,\n",
			"    pub widget_offset: Option<i32>,\n",
			"    pub widget_skew: Option<i64>,\n",
			"pub enum WidgetMode {\n    /// Quick.\n    Fast,\n    SafeAndSlow,\n}\n",
			"        if v == pb::WidgetMode::SafeAndSlow as i32 {\n            WidgetMode::SafeAndSlow\n        } else {\n            WidgetMode::Fast\n        }\n",
			"            WidgetMode::SafeAndSlow => pb::WidgetMode::SafeAndSlow as i32,\n",
			"            widget_pause_ms: self.widget_pause.map(millis),\n",
			"            widget_label: self.widget_label.clone(),\n",
			"            widget_mode: self.widget_mode.map(WidgetMode::to_wire),\n",
			"            widget_pause: s.widget_pause_ms.map(from_millis),\n",
			"            widget_mode: s.widget_mode.map(WidgetMode::from_wire),\n",
			"            max_widgets: Some(l.max_widgets),\n",
			"            widget_pause: Some(from_millis(l.widget_pause_ms)),\n",
			"            widget_label: None,\n",
			"            widget_skew: Some(l.widget_skew),\n",
		},
		goFile: {
			"\t// Throwaway: how many widgets\n\t// at most.\n\tMaxWidgets *uint64\n",
			"\tWidgetPause *time.Duration\n",
			"\tWidgetLabel *string\n",
			"\tWidgetStrict *bool\n",
			"\t// WidgetMode is \"fast\" or \"safe_and_slow\".\n\tWidgetMode *string\n",
			"\tWidgetOffset *int32\n",
			"\tWidgetSkew *int64\n",
			"func widgetModeToProto(name string) (seppv1.WidgetMode, error) {\n",
			"\tcase \"safe_and_slow\":\n\t\treturn seppv1.WidgetMode_WIDGET_MODE_SAFE_AND_SLOW, nil\n",
			"sepp: widget mode must be fast or safe_and_slow, got %q",
			"\tcase seppv1.WidgetMode_WIDGET_MODE_SAFE_AND_SLOW:\n\t\treturn \"safe_and_slow\"\n\t}\n\treturn \"fast\"\n",
			"\tout.MaxWidgets = s.MaxWidgets\n",
			"\tif s.WidgetPause != nil {\n\t\tout.WidgetPauseMs = ptrTo(s.WidgetPause.Milliseconds())\n\t}\n",
			"\tout.WidgetLabel = s.WidgetLabel\n",
			"\t\tv, err := widgetModeToProto(*s.WidgetMode)\n",
			"\t\tout.WidgetMode = &v\n",
			"\tout.WidgetSkew = s.WidgetSkew\n",
			"\t\tout.WidgetPause = ptrTo(time.Duration(*p.WidgetPauseMs) * time.Millisecond)\n",
			"\t\tout.WidgetMode = ptrTo(widgetModeName(*p.WidgetMode))\n",
			"\tout.WidgetStrict = p.WidgetStrict\n",
			"\t\tMaxWidgets:         ptrTo(l.GetMaxWidgets()),\n",
			"\t\tWidgetPause:        ptrTo(time.Duration(l.GetWidgetPauseMs()) * time.Millisecond),\n",
			"\t\tWidgetMode:         ptrTo(widgetModeName(l.GetWidgetMode())),\n",
			"\t\tWidgetOffset:       ptrTo(l.GetWidgetOffset()),\n",
			"but Tags, WidgetLabel, which QueueLimits lacks.",
		},
	}
	for name, snippets := range want {
		for _, s := range snippets {
			if name == goFile {
				s = collapseBlanks(s)
			}
			if strings.Contains(before[name], s) {
				t.Errorf("%s: already there before the fields were added: %q", name, s)
			}
			if !strings.Contains(after[name], s) {
				t.Errorf("%s: lacks %q", name, s)
			}
		}
	}
	// Nothing the protos had is lost: every line written before is still
	// written, in the same order (new ones come in between), but those
	// that list the settings QueueLimits lacks and the import of the
	// enums' wire types, which now name widget_label and WidgetMode too.
	changes := []string{"lacks", "but tags", "but `tags`", `Omit<QueueSettings, "tags">`, "import type { RetryBackoffJSON }"}
	for name, old := range before {
		rest := after[name]
	lines:
		for _, line := range strings.SplitAfter(old, "\n") {
			for _, c := range changes {
				if strings.Contains(line, c) {
					continue lines
				}
			}
			j := strings.Index(rest, line)
			if j < 0 {
				t.Errorf("%s: the line %q is gone, or out of order, once fields are added", name, line)
				break
			}
			rest = rest[j+len(line):]
		}
	}
	// The Python dataclass takes its fields positionally: the new ones
	// come after the old ones.
	py := after[pythonFile]
	if strings.Index(py, "    max_widgets: Optional") < strings.Index(py, "    completed_retention: Optional") {
		t.Error("python: a field added at the end of the message comes before the old ones")
	}
	// QueueLimits' literal in the Go output must not name WidgetLabel.
	if lim := after[goFile][strings.Index(after[goFile], "func queueLimitsFromProto"):]; strings.Contains(lim, "WidgetLabel") {
		t.Error("go: queueLimitsFromProto reads widget_label, which QueueLimits lacks")
	}
}

// TestRefuses checks the settings the plugin does not guess a native
// form for, each alone in a QueueSettings of its own.
func TestRefuses(t *testing.T) {
	tests := []struct {
		name, settings, limits, wantErr string
	}{
		{"no presence", "uint32 default_priority = 1;", "", "needs presence"},
		{"repeated", "repeated string names = 1;", "", "needs presence"},
		{"map", "map<string, string> labels = 1;", "", "needs presence"},
		{"float", "optional double ratio = 1;", "", "double has no native form"},
		{"bytes", "optional bytes blob = 1;", "", "bytes has no native form"},
		{"_ms on a string", "optional string wait_ms = 1;", "", "must be an int64 or uint64"},
		{"_ms on 32 bits", "optional uint32 wait_ms = 1;", "", "must be an int64 or uint64"},
		{"a message", "Other other = 1;", "", "sepp.v1.Other is no map<string, string> wrapper"},
		{"a keyword", "optional string type = 1;", "", "type is a Python or Rust keyword"},
		{"an enum without its prefix", "optional Mode mode = 1;", "", "enum value FAST lacks the prefix MODE_"},
		{"a limit of another type", "optional uint64 max_length = 1;", "uint32 max_length = 1;", "sepp.v1.QueueLimits.max_length does not match"},
		{"a limit with presence", "optional uint64 max_length = 1;", "optional uint64 max_length = 1;", "sepp.v1.QueueLimits.max_length does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `syntax = "proto3"; package sepp.v1; option go_package = "example.com/seppv1";
				message Other { string a = 1; string b = 2; }
				enum Mode { MODE_UNSPECIFIED = 0; FAST = 1; }
				message QueueSettings { ` + tt.settings + ` }
				message QueueLimits { ` + tt.limits + ` }`
			_, err := runPlugin(t, map[string]string{"sepp/v1/t.proto": src}, []string{"sepp/v1/t.proto"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// collapseBlanks is s with each run of spaces and tabs as one space.
func collapseBlanks(s string) string { return blanks.ReplaceAllString(s, " ") }

var blanks = regexp.MustCompile(`[ \t]+`)

func readProto(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(protoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// insertAtEnd puts text at the end of the message that starts with
// opening, before its closing brace.
func insertAtEnd(t *testing.T, s, opening, text string) string {
	t.Helper()
	i := strings.Index(s, opening)
	if i < 0 {
		t.Fatalf("no %q", opening)
	}
	j := strings.Index(s[i:], "\n}\n")
	if j < 0 {
		t.Fatalf("no end to %q", opening)
	}
	j += i + 1
	return s[:j] + text + s[j:]
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runPlugin compiles the files named in toGenerate, reading each from
// overrides or else from the repository's proto/ (and the well-known
// types), and runs the plugin on them as protoc would: every file in the
// request, its imports first. It returns the files written, by path.
func runPlugin(t *testing.T, overrides map[string]string, toGenerate []string) (map[string]string, error) {
	t.Helper()
	return runPluginWith(t, "", overrides, toGenerate)
}

// runPluginWith is runPlugin given the plugin's option string (buf.gen.yaml's
// opt), such as "lang=go".
func runPluginWith(t *testing.T, param string, overrides map[string]string, toGenerate []string) (map[string]string, error) {
	t.Helper()
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: func(path string) (io.ReadCloser, error) {
				if src, ok := overrides[path]; ok {
					return io.NopCloser(strings.NewReader(src)), nil
				}
				return os.Open(filepath.Join(protoRoot, path))
			},
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := compiler.Compile(context.Background(), toGenerate...)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	req := plugintest.Request(files, toGenerate, param)
	var p params
	gen, err := protogen.Options{ParamFunc: p.set}.New(req)
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	if err := generate(gen, p); err != nil {
		return nil, err
	}
	out := plugintest.Files(t, gen.Response())
	return out, nil
}
