package main

import (
	"maps"
	"strings"
	"testing"
)

// jobThrowaway is what TestNewJobFieldReachesEverySDK adds to a copy of
// types.proto: a field of each kind at the end of sepp.v1.Job, a new
// embedded message (repeated, and singular) and a field of a shared enum
// in it.
const jobThrowaway = `  // Throwaway: a widget's
  // count.
  uint32 widget_count = 900;
  int64 widget_skew = 901;
  uint64 widget_id = 902;
  bool widget_strict = 903;
  string widget_label = 904;
  bytes widget_blob = 905;
  google.protobuf.Timestamp widget_at = 906;
  google.protobuf.Duration widget_wait = 907;
  map<string, string> widget_tags = 908;
  repeated uint64 widget_ids = 909;
  repeated string widget_names = 910;
  repeated Widget widgets = 911;
  Widget main_widget = 912;
  DeadLetterCause widget_cause = 913;
  ParentFailurePolicy widget_policy = 914;
`

const jobThrowawayMessage = `
// Widget is a throwaway message.
message Widget {
  JobState state = 1;
  // Its name.
  string name = 2;
}
`

// jobProtosWith is the public protos with the throwaway fields added.
func jobProtosWith(t *testing.T) map[string]string {
	t.Helper()
	types := readProto(t, "sepp/v1/types.proto")
	types = insertAtEnd(t, types, "message Job {\n", jobThrowaway) + jobThrowawayMessage
	return map[string]string{"sepp/v1/types.proto": types}
}

// TestNewJobFieldReachesEverySDK adds throwaway fields of every kind the
// rules know to a copy of sepp.v1.Job, and a message it embeds, and
// checks that each SDK's output gains each with its native type and its
// conversion from the wire: what adding a Job field and running make
// generate does, with no hand edit in the SDKs.
func TestNewJobFieldReachesEverySDK(t *testing.T) {
	before, after := pluginOutputs(t, jobProtosWith(t))
	want := map[string][]string{
		jobTSFile: {
			"  /**\n   * Throwaway: a widget's\n   * count.\n   */\n  widgetCount: number;\n",
			"  widgetSkew: string;\n",
			"  widgetId: string;\n",
			"  widgetStrict: boolean;\n",
			"  widgetLabel: string;\n",
			"  widgetBlob: Uint8Array;\n",
			"  widgetAt?: Date;\n",
			"  widgetWaitMs?: number;\n",
			"  widgetTags: Record<string, string>;\n",
			"  widgetIds: string[];\n",
			"  widgetNames: string[];\n",
			"  widgets: Widget[];\n",
			"  mainWidget?: Widget;\n",
			"  widgetCause: DeadLetterCause;\n",
			"  widgetPolicy?: ParentFailurePolicy;\n",
			"    widgetCount: num(m.widgetCount),\n",
			"    widgetSkew: u64(m.widgetSkew),\n",
			"    widgetId: u64(m.widgetId),\n",
			"    widgetStrict: m.widgetStrict === true,\n",
			"    widgetLabel: str(m.widgetLabel),\n",
			"    widgetBlob: base64ToBytes(str(m.widgetBlob)),\n",
			"    widgetTags: stringMapFromJSON(m.widgetTags),\n",
			"    widgetIds: arr(m.widgetIds).map((x) => u64(x)),\n",
			"    widgetNames: arr(m.widgetNames).map((x) => str(x)),\n",
			"    widgets: arr(m.widgets).map((x) => widgetFromJSON(x)),\n",
			"    widgetCause: deadLetterCauseFromJSON(m.widgetCause),\n",
			"  set(out, \"widgetAt\", timeFrom(m.widgetAt));\n",
			"  set(out, \"widgetWaitMs\", typeof m.widgetWait === \"string\" ? durationFrom(m.widgetWait) : undefined);\n",
			"  if (m.mainWidget !== undefined && m.mainWidget !== null) out.mainWidget = widgetFromJSON(m.mainWidget);\n",
			"  set(out, \"widgetPolicy\", parentFailurePolicyFromJSON(m.widgetPolicy));\n",
			"/**\n * Widget is a throwaway message.\n *\n * Generated from sepp.v1.Widget (tools/protoc-gen-sepp-sdk has the rules).\n */\nexport interface Widget {\n  state: JobState;\n  /** Its name. */\n  name: string;\n}\n",
			"export function widgetFromJSON(v: unknown): Widget {\n  const m = message<WidgetJSON>(v);\n  const out: Widget = {\n    state: jobStateFromJSON(m.state),\n    name: str(m.name),\n  };\n",
			"WidgetJSON } from \"./sepp/v1/types_json.js\";\n",
		},
		jobPythonFile: {
			"    #: Throwaway: a widget's\n    #: count.\n    widget_count: int = 0\n",
			"    widget_skew: int = 0\n",
			"    widget_id: int = 0\n",
			"    widget_strict: bool = False\n",
			"    widget_label: str = \"\"\n",
			"    widget_blob: bytes = b\"\"\n",
			"    widget_at: Optional[datetime] = None\n",
			"    widget_wait: Optional[timedelta] = None\n",
			"    widget_tags: Mapping[str, str] = field(default_factory=dict)\n",
			"    widget_ids: tuple[int, ...] = ()\n",
			"    widget_names: tuple[str, ...] = ()\n",
			"    widgets: tuple[Widget, ...] = ()\n",
			"    main_widget: Optional[Widget] = None\n",
			"    widget_cause: DeadLetterCause = DeadLetterCause.UNKNOWN\n",
			"    widget_policy: Optional[ParentFailure] = None\n",
			"            widget_count=m.widget_count,\n",
			"            widget_blob=bytes(m.widget_blob),\n",
			"            widget_at=_from_ts(m.widget_at),\n",
			"            widget_wait=m.widget_wait.ToTimedelta() if m.HasField(\"widget_wait\") else None,\n",
			"            widget_tags=dict(m.widget_tags),\n",
			"            widget_ids=tuple(m.widget_ids),\n",
			"            widgets=tuple(Widget.from_proto(x) for x in m.widgets),\n",
			"            main_widget=Widget.from_proto(m.main_widget) if m.HasField(\"main_widget\") else None,\n",
			"            widget_cause=DeadLetterCause(m.widget_cause),\n",
			"            widget_policy=ParentFailure(m.widget_policy) if m.widget_policy else None,\n",
			"@dataclass(frozen=True)\nclass Widget:\n",
			"    _: KW_ONLY\n    state: JobState = JobState.UNKNOWN\n    #: Its name.\n    name: str = \"\"\n",
			"    \"Widget\",\n",
			"from dataclasses import KW_ONLY, dataclass, field\n",
		},
		jobRustFile: {
			"    /// Throwaway: a widget's\n    /// count.\n    pub widget_count: u32,\n",
			"    pub widget_skew: i64,\n",
			"    pub widget_id: u64,\n",
			"    pub widget_strict: bool,\n",
			"    pub widget_label: String,\n",
			"    pub widget_blob: Vec<u8>,\n",
			"    pub widget_at: Option<SystemTime>,\n",
			"    pub widget_wait: Option<Duration>,\n",
			"    pub widget_tags: BTreeMap<String, String>,\n",
			"    pub widget_ids: Vec<u64>,\n",
			"    pub widget_names: Vec<String>,\n",
			"    pub widgets: Vec<Widget>,\n",
			"    pub main_widget: Option<Widget>,\n",
			"    pub widget_cause: DeadLetterCause,\n",
			"    pub widget_policy: Option<ParentFailure>,\n",
			"            widget_count: w.widget_count,\n",
			"            widget_at: w.widget_at.and_then(|t| SystemTime::try_from(t).ok()),\n",
			"            widget_wait: w.widget_wait.and_then(|d| Duration::try_from(d).ok()),\n",
			"            widget_tags: w.widget_tags.into_iter().collect(),\n",
			"            widget_ids: w.widget_ids,\n",
			"            widgets: w.widgets.into_iter().map(Widget::from_wire).collect(),\n",
			"            main_widget: w.main_widget.map(Widget::from_wire),\n",
			"            widget_cause: DeadLetterCause::from_wire(w.widget_cause),\n",
			"            widget_policy: if w.widget_policy == 0 { None } else { Some(ParentFailure::from_wire(w.widget_policy)) },\n",
			"pub struct Widget {\n    pub state: JobState,\n    /// Its name.\n    pub name: String,\n}\n",
			"    pub(crate) fn from_wire(w: pb::Widget) -> Widget {\n",
		},
		jobGoFile: {
			"\t// Throwaway: a widget's\n\t// count.\n\tWidgetCount uint32\n",
			"\tWidgetSkew int64\n",
			"\tWidgetID uint64\n",
			"\tWidgetStrict bool\n",
			"\tWidgetLabel string\n",
			"\tWidgetBlob []byte\n",
			"\tWidgetAt time.Time\n",
			"\tWidgetWait time.Duration\n",
			"\tWidgetTags map[string]string\n",
			"\tWidgetIds []uint64\n",
			"\tWidgetNames []string\n",
			"\tWidgets []Widget\n",
			"\tMainWidget *Widget\n",
			"\tWidgetCause DeadLetterCause\n",
			"\tWidgetPolicy ParentFailure\n",
			"\tout.WidgetCount = m.GetWidgetCount()\n",
			"\tout.WidgetAt = jobTime(m.GetWidgetAt())\n",
			"\tout.WidgetWait = m.GetWidgetWait().AsDuration()\n",
			"\tout.WidgetTags = m.GetWidgetTags()\n",
			"\tfor _, x := range m.GetWidgets() {\n\t\tout.Widgets = append(out.Widgets, widgetFromProto(x))\n\t}\n",
			"\tif x := m.GetMainWidget(); x != nil {\n\t\tv := widgetFromProto(x)\n\t\tout.MainWidget = &v\n\t}\n",
			"\tout.WidgetCause = DeadLetterCause(m.GetWidgetCause())\n",
			"\tif m.GetWidgetPolicy() == 0 {\n\t\tout.WidgetPolicy = ParentFailure(seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_CANCEL)\n\t}\n",
			"type Widget struct {\n\tState JobState\n\t// Its name.\n\tName string\n}\n",
			"func widgetFromProto(m *seppv1.Widget) Widget {\n",
		},
	}
	checkGrownOutput(t, before, after, want, jobGoFile, func(line string) bool {
		// The imports, which now name WidgetJSON and field too.
		return strings.Contains(line, "types_json.js") || strings.HasPrefix(line, "from dataclasses import")
	})
}

// pluginOutputs runs the plugin both ways (the SDKs' files and, with
// lang=go, the Go client's) over the public protos, then over them with
// the files in changed replacing theirs: every file written, before and
// after.
func pluginOutputs(t *testing.T, changed map[string]string) (before, after map[string]string) {
	t.Helper()
	before, after = map[string]string{}, map[string]string{}
	for _, param := range []string{"", "lang=go"} {
		b, err := runPluginWith(t, param, nil, publicProtos(t))
		if err != nil {
			t.Fatal(err)
		}
		a, err := runPluginWith(t, param, changed, publicProtos(t))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(before, b)
		maps.Copy(after, a)
	}
	return before, after
}

// checkGrownOutput checks the generated files before and after fields
// were added to the protos: each snippet wanted is new in its file, and
// every line written before is still written, in the same order, but the
// import lines isImport names. The Go file (goFile) is compared with every
// run of blanks as one space, since gofmt aligns a struct's fields by the
// longest name among them.
func checkGrownOutput(t *testing.T, before, after map[string]string, want map[string][]string, goFile string, isImport func(line string) bool) {
	t.Helper()
	before[goFile], after[goFile] = collapseBlanks(before[goFile]), collapseBlanks(after[goFile])
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
	for name := range want {
		rest := after[name]
		for _, line := range strings.SplitAfter(before[name], "\n") {
			if isImport(line) {
				continue
			}
			j := strings.Index(rest, line)
			if j < 0 {
				t.Errorf("%s: the line %q is gone, or out of order, once fields are added", name, line)
				break
			}
			rest = rest[j+len(line):]
		}
	}
}

// TestJobRefuses checks the fields the plugin does not guess a native
// form for, each alone in a Job of its own.
func TestJobRefuses(t *testing.T) {
	tests := []struct{ name, fields, wantErr string }{
		{"float", "double ratio = 1;", "double has no native form"},
		{"a oneof", "oneof o { string a = 1; string b = 2; }", "a oneof has no native form"},
		{"proto3 optional", "optional string a = 1;", "proto3 optional has no native form"},
		{"an enum not in jobEnums", "Mode mode = 1;", "enum sepp.v1.Mode is not in jobEnums"},
		{"repeated timestamps", "repeated google.protobuf.Timestamp at = 1;", "a repeated message has no native form"},
		{"repeated enums", "repeated JobState states = 1;", "a repeated enum has no native form"},
		{"a map of ints", "map<string, int32> counts = 1;", "a map other than map<string, string>"},
		{"another package's message", "google.protobuf.Empty e = 1;", "message google.protobuf.Empty is not of package sepp.v1"},
		{"a nested message", "Inner inner = 1; message Inner { string a = 1; }", "must be declared at the top level"},
		{"a keyword", "string type = 1;", "type is a Python or Rust keyword"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `syntax = "proto3"; package sepp.v1; option go_package = "example.com/seppv1";
				import "google/protobuf/timestamp.proto"; import "google/protobuf/empty.proto";
				enum Mode { MODE_UNSPECIFIED = 0; MODE_FAST = 1; }
				enum JobState { JOB_STATE_UNSPECIFIED = 0; JOB_STATE_READY = 1; }
				message QueueSettings { }
				message QueueLimits { }
				message Job { ` + tt.fields + ` }`
			_, err := runPlugin(t, map[string]string{"sepp/v1/t.proto": src}, []string{"sepp/v1/t.proto"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
