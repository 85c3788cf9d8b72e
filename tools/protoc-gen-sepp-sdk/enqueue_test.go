package main

import (
	"strings"
	"testing"
)

// enqThrowaway is what TestNewEnqueueFieldReachesEverySDK adds to a copy
// of queue_service.proto: a field of each kind the rules know at the end
// of sepp.v1.EnqueueRequest, one in UniqueOptions, and a new embedded
// message (singular and repeated).
const enqThrowaway = `  // Throwaway: a widget's
  // note.
  string widget_note = 950;
  uint32 widget_count = 951;
  int64 widget_skew = 952;
  bool widget_strict = 953;
  int64 widget_wait_ms = 954;
  map<string, string> widget_tags = 955;
  google.protobuf.Timestamp widget_at = 956;
  repeated string widget_names = 957;
  optional uint32 widget_level = 958;
  bytes widget_blob = 959;
  ParentFailurePolicy widget_policy = 960;
  Widget widget = 961;
  repeated Widget widgets = 962;
`

const enqThrowawayMessage = `
// Widget is a throwaway message.
message Widget {
  // Its name.
  string name = 1;
  uint64 size = 2;
}
`

func enqProtosWith(t *testing.T) map[string]string {
	t.Helper()
	qs := readProto(t, "sepp/v1/queue_service.proto")
	qs = insertAtEnd(t, qs, "message EnqueueRequest {\n", enqThrowaway)
	qs = insertAtEnd(t, qs, "message UniqueOptions {\n", "  uint64 widget_hold_ms = 90;\n") + enqThrowawayMessage
	return map[string]string{"sepp/v1/queue_service.proto": qs}
}

// TestNewEnqueueFieldReachesEverySDK adds throwaway fields of every kind
// the rules know to a copy of sepp.v1.EnqueueRequest (and UniqueOptions,
// and a new message it embeds), and checks that each SDK's output gains
// each with its native type, its setter where the SDK has them, and its
// conversion to the wire: what adding an enqueue field and running make
// generate does, with no hand edit in the SDKs.
func TestNewEnqueueFieldReachesEverySDK(t *testing.T) {
	before, after := pluginOutputs(t, enqProtosWith(t))
	want := map[string][]string{
		enqTSFile: {
			"  /**\n   * Throwaway: a widget's\n   * note.\n   */\n  widgetNote?: string;\n",
			"  widgetCount?: number;\n",
			"  widgetSkew?: string;\n",
			"  widgetStrict?: boolean;\n",
			"  widgetWaitMs?: number;\n",
			"  widgetTags?: Record<string, string>;\n",
			"  widgetAt?: Date;\n",
			"  widgetNames?: string[];\n",
			"  widgetLevel?: number;\n",
			"  widgetBlob?: Uint8Array;\n",
			"  widgetPolicy?: ParentFailurePolicy;\n",
			"  widget?: Widget;\n",
			"  widgets?: Widget[];\n",
			"  widgetHoldMs?: number;\n",
			"  if (r.widgetNote) m.widgetNote = r.widgetNote;\n",
			"  if (r.widgetCount) m.widgetCount = r.widgetCount;\n",
			"  if (r.widgetSkew) m.widgetSkew = r.widgetSkew;\n",
			"  if (r.widgetStrict) m.widgetStrict = r.widgetStrict;\n",
			"  if (r.widgetWaitMs) m.widgetWaitMs = String(Math.floor(r.widgetWaitMs));\n",
			"  if (r.widgetTags && Object.keys(r.widgetTags).length > 0) m.widgetTags = { ...r.widgetTags };\n",
			"  if (r.widgetAt) m.widgetAt = r.widgetAt.toISOString();\n",
			"  if (r.widgetNames && r.widgetNames.length > 0) m.widgetNames = [...r.widgetNames];\n",
			"  if (r.widgetLevel !== undefined) m.widgetLevel = r.widgetLevel;\n",
			"  if (r.widgetBlob && r.widgetBlob.length > 0) m.widgetBlob = bytesToBase64(r.widgetBlob);\n",
			"  if (r.widgetPolicy) m.widgetPolicy = parentFailurePolicyToJSON(r.widgetPolicy);\n",
			"  if (r.widget) m.widget = widgetToJSON(r.widget);\n",
			"  if (r.widgets && r.widgets.length > 0) m.widgets = r.widgets.map((x) => widgetToJSON(x));\n",
			"  if (r.widgetHoldMs) m.widgetHoldMs = String(Math.floor(r.widgetHoldMs));\n",
			"export interface Widget {\n  /** Its name. */\n  name?: string;\n  size?: string;\n}\n",
			"export function widgetToJSON(r: Widget): WidgetJSON {\n",
			"import { bytesToBase64 } from \"../wire.js\";\n",
		},
		enqPythonFile: {
			"    _: KW_ONLY\n    #: Throwaway: a widget's\n    #: note.\n    widget_note: str = \"\"\n",
			"    widget_count: int = 0\n",
			"    widget_skew: int = 0\n",
			"    widget_strict: bool = False\n",
			"    widget_wait: timedelta = timedelta(0)\n",
			"    widget_tags: dict[str, str] = field(default_factory=dict)\n",
			"    widget_at: Optional[datetime] = None\n",
			"    widget_names: Sequence[str] = ()\n",
			"    widget_level: Optional[int] = None\n",
			"    widget_blob: bytes = b\"\"\n",
			"    widget_policy: Optional[ParentFailure] = None\n",
			"    widget: Optional[Widget] = None\n",
			"    widgets: Sequence[Widget] = ()\n",
			"    _: KW_ONLY\n    widget_hold: timedelta = timedelta(0)\n",
			"        m.widget_note = self.widget_note\n",
			"        m.widget_count = self.widget_count\n",
			"        m.widget_skew = self.widget_skew\n",
			"        m.widget_strict = self.widget_strict\n",
			"        m.widget_wait_ms = _whole_ms(self.widget_wait)\n",
			"        m.widget_tags.update(self.widget_tags)\n",
			"        if self.widget_at is not None:\n            m.widget_at.CopyFrom(_to_ts(self.widget_at))\n",
			"        m.widget_names.extend(self.widget_names)\n",
			"        if self.widget_level is not None:\n            m.widget_level = self.widget_level\n",
			"        m.widget_blob = bytes(self.widget_blob)\n",
			"        if self.widget_policy is not None:\n            m.widget_policy = _PARENT_FAILURE_POLICY_TO_WIRE[self.widget_policy]\n",
			"        if self.widget is not None:\n            m.widget.CopyFrom(self.widget.to_proto())\n",
			"        m.widgets.extend(x.to_proto() for x in self.widgets)\n",
			"        m.widget_hold_ms = _whole_ms(self.widget_hold)\n",
			"@dataclass\nclass Widget:\n",
			"    def to_proto(self) -> queue_service_pb2.Widget:\n",
			"from dataclasses import KW_ONLY, dataclass, field\n",
			"    \"Widget\",\n",
		},
		enqRustFile: {
			"    /// Throwaway: a widget's\n    /// note.\n    pub(crate) widget_note: String,\n",
			"    pub(crate) widget_count: u32,\n",
			"    pub(crate) widget_skew: i64,\n",
			"    pub(crate) widget_strict: bool,\n",
			"    pub(crate) widget_wait: Duration,\n",
			"    pub(crate) widget_tags: BTreeMap<String, String>,\n",
			"    pub(crate) widget_at: Option<SystemTime>,\n",
			"    pub(crate) widget_names: Vec<String>,\n",
			"    pub(crate) widget_level: Option<u32>,\n",
			"    pub(crate) widget_blob: Vec<u8>,\n",
			"    pub(crate) widget_policy: Option<ParentFailure>,\n",
			"    pub(crate) widget: Option<Widget>,\n",
			"    pub(crate) widgets: Vec<Widget>,\n",
			"    pub widget_hold: Duration,\n",
			"            widget_note: Default::default(),\n",
			"    pub fn with_widget_note(mut self, widget_note: impl Into<String>) -> Self {\n        self.widget_note = widget_note.into();\n",
			"    pub fn with_widget_count(mut self, widget_count: u32) -> Self {\n",
			"    pub fn with_widget_wait(mut self, widget_wait: Duration) -> Self {\n",
			"    pub fn with_widget_tags(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {\n        self.widget_tags.insert(key.into(), value.into());\n",
			"    pub fn with_widget_at(mut self, widget_at: SystemTime) -> Self {\n        self.widget_at = Some(widget_at);\n",
			"    pub fn with_widget_names<I, S>(mut self, widget_names: I) -> Self\n",
			"    pub fn with_widget_level(mut self, widget_level: u32) -> Self {\n        self.widget_level = Some(widget_level);\n",
			"    pub fn with_widget_blob(mut self, widget_blob: impl Into<Vec<u8>>) -> Self {\n",
			"    pub fn with_widget_policy(mut self, widget_policy: ParentFailure) -> Self {\n",
			"    pub fn with_widgets(mut self, widgets: impl IntoIterator<Item = Widget>) -> Self {\n",
			"    pub fn with_widget_hold(mut self, widget_hold: Duration) -> Self {\n",
			"    pub fn widget_note(&self) -> &str {\n        &self.widget_note\n",
			"    pub fn widget_tags(&self) -> &BTreeMap<String, String> {\n",
			"    pub fn widget(&self) -> Option<&Widget> {\n",
			"            widget_note: self.widget_note.clone(),\n",
			"            widget_count: self.widget_count,\n",
			"            widget_wait_ms: self.widget_wait.as_millis().min(i64::MAX as u128) as i64,\n",
			"            widget_tags: self.widget_tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),\n",
			"            widget_at: self.widget_at.map(timestamp),\n",
			"            widget_names: self.widget_names.clone(),\n",
			"            widget_level: self.widget_level,\n",
			"            widget_policy: self.widget_policy.map_or(0, |v: ParentFailure| v.to_wire() as i32),\n",
			"            widget: self.widget.as_ref().map(Widget::to_wire),\n",
			"            widgets: self.widgets.iter().map(Widget::to_wire).collect(),\n",
			"            widget_hold_ms: self.widget_hold.as_millis().min(u64::MAX as u128) as u64,\n",
			"#[derive(Clone, Debug, Default, PartialEq, Eq)]\npub struct Widget {\n    /// Its name.\n    pub name: String,\n    pub size: u64,\n}\n",
			"    pub(crate) fn to_wire(&self) -> pb::Widget {\n",
		},
		enqGoFile: {
			"\t// Throwaway: a widget's\n\t// note.\n\tWidgetNote string\n",
			"\tWidgetCount uint32\n",
			"\tWidgetSkew int64\n",
			"\tWidgetStrict bool\n",
			"\tWidgetWait time.Duration\n",
			"\tWidgetTags map[string]string\n",
			"\tWidgetAt time.Time\n",
			"\tWidgetNames []string\n",
			"\tWidgetLevel *uint32\n",
			"\tWidgetBlob []byte\n",
			"\tWidgetPolicy ParentFailure\n",
			"\tWidget *Widget\n",
			"\tWidgets []Widget\n",
			"\tWidgetHold time.Duration\n",
			"func (r *EnqueueRequest) WithWidgetNote(v string) *EnqueueRequest {\n\tr.WidgetNote = v\n",
			"func (r *EnqueueRequest) WithWidgetWait(v time.Duration) *EnqueueRequest {\n",
			"func (r *EnqueueRequest) WithWidgetTags(key, value string) *EnqueueRequest {\n",
			"func (r *EnqueueRequest) WithWidgetAt(v time.Time) *EnqueueRequest {\n",
			"func (r *EnqueueRequest) WithWidgetNames(v ...string) *EnqueueRequest {\n",
			"func (r *EnqueueRequest) WithWidgetLevel(v uint32) *EnqueueRequest {\n\tr.WidgetLevel = &v\n",
			"func (r *EnqueueRequest) WithWidget(v Widget) *EnqueueRequest {\n\tr.Widget = &v\n",
			"\tm.WidgetNote = r.WidgetNote\n",
			"\tm.WidgetCount = r.WidgetCount\n",
			"\tm.WidgetWaitMs = int64(r.WidgetWait / time.Millisecond)\n",
			"\tm.WidgetTags = maps.Clone(r.WidgetTags)\n",
			"\tif !r.WidgetAt.IsZero() {\n\t\tm.WidgetAt = timestamppb.New(r.WidgetAt)\n\t}\n",
			"\tm.WidgetNames = slices.Clone(r.WidgetNames)\n",
			"\tif r.WidgetLevel != nil {\n\t\tv := *r.WidgetLevel\n\t\tm.WidgetLevel = &v\n\t}\n",
			"\tm.WidgetBlob = r.WidgetBlob\n",
			"\tm.WidgetPolicy = seppv1.ParentFailurePolicy(r.WidgetPolicy)\n",
			"\tif r.Widget != nil {\n\t\tm.Widget = widgetToProto(r.Widget)\n\t}\n",
			"\tfor i := range r.Widgets {\n\t\tm.Widgets = append(m.Widgets, widgetToProto(&r.Widgets[i]))\n\t}\n",
			"\tm.WidgetHoldMs = uint64(r.WidgetHold / time.Millisecond)\n",
			"type Widget struct {\n\t// Its name.\n\tName string\n\tSize uint64\n}\n",
			"func widgetToProto(r *Widget) *seppv1.Widget {\n",
		},
	}
	checkGrownOutput(t, before, after, want, enqGoFile, func(line string) bool {
		// The imports, which now name more.
		return strings.Contains(line, "_json.js") || strings.HasPrefix(line, "from dataclasses import")
	})
}

// TestEnqueueRefuses checks the fields the plugin does not guess a
// native form for, each alone in an EnqueueRequest of its own.
func TestEnqueueRefuses(t *testing.T) {
	tests := []struct{ name, fields, wantErr string }{
		{"float", "double ratio = 1;", "double has no native form"},
		{"a oneof", "oneof o { string a = 1; string b = 2; }", "a oneof has no native form"},
		{"a Duration", "google.protobuf.Duration wait = 1;", "a duration is an int64 named *_ms"},
		{"_ms on 32 bits", "uint32 wait_ms = 1;", "must be an int64 or uint64"},
		{"an enum not the job family's", "Mode mode = 1;", "enum sepp.v1.Mode is not the job family's"},
		{"repeated timestamps", "repeated google.protobuf.Timestamp at = 1;", "a repeated message has no native form"},
		{"repeated enums", "repeated JobState states = 1;", "a repeated enum has no native form"},
		{"a map of ints", "map<string, int32> counts = 1;", "a map other than map<string, string>"},
		{"another package's message", "google.protobuf.Empty e = 1;", "message google.protobuf.Empty is not of package sepp.v1"},
		{"a nested message", "Inner inner = 1; message Inner { string a = 1; }", "must be declared at the top level"},
		{"a keyword", "string type = 1;", "type is a Python or Rust keyword"},
		{"optional bytes", "optional bytes b = 1;", "proto3 optional is for"},
		{"a job message of other kinds", "Job job = 1;", "must be a string, a bool or a 32-bit integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The real protos (the job family's exceptions name its
			// fields), EnqueueRequest's fields replaced.
			qs := readProto(t, "sepp/v1/queue_service.proto")
			i := strings.Index(qs, "message EnqueueRequest {\n")
			if i < 0 {
				t.Fatal("no EnqueueRequest")
			}
			i += len("message EnqueueRequest {\n")
			j := i + strings.Index(qs[i:], "\n}\n")
			qs = qs[:i] + tt.fields + qs[j:] + "\nenum Mode { MODE_UNSPECIFIED = 0; MODE_FAST = 1; }\n"
			_, err := runPlugin(t, map[string]string{"sepp/v1/queue_service.proto": qs}, publicProtos(t))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
