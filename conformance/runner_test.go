package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

// scenario is one file of scenarios/: steps run in order against one
// server; README.md describes each field.
type scenario struct {
	Description string `json:"description"`
	Steps       []step `json:"steps"`
}

type step struct {
	Op   string         `json:"op"`
	Args map[string]any `json:"args"`
	// Expect is matched against the step's result (objects partially,
	// arrays element by element); Error against its error. A step with
	// neither must succeed.
	Expect any            `json:"expect"`
	Error  *expectedError `json:"error"`
	// Save names values of the result for later steps: {"var": "path"}.
	Save map[string]string `json:"save"`
	// WithinMS repeats the step until it matches or the time is up.
	WithinMS int `json:"within_ms"`
}

type expectedError struct {
	Kind  string `json:"kind"`
	Field string `json:"field"`
}

// stepError is a failed call as the suite sees it: the SDK's typed error
// named by kind, and the request field it names, if any.
type stepError struct {
	Kind  string
	Field string
	Err   error
}

func (e *stepError) Error() string {
	return fmt.Sprintf("%s (field %q): %v", e.Kind, e.Field, e.Err)
}

// driver runs one step's call with an SDK and returns its result in the
// suite's canonical form (JSON-shaped: maps, slices, strings, float64
// numbers, bools, nil), or a *stepError.
type driver interface {
	call(ctx context.Context, op string, args map[string]any) (map[string]any, error)
}

// loadScenarios reads every scenario file of dir, by name.
func loadScenarios(dir string) (map[string]scenario, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	out := map[string]scenario{}
	var names []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		var sc scenario
		if err := jsonUnmarshal(string(b), &sc); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(sc.Steps) == 0 {
			return nil, nil, fmt.Errorf("%s: no steps", p)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		out[name] = sc
		names = append(names, name)
	}
	sort.Strings(names)
	return out, names, nil
}

// jsonUnmarshal decodes a scenario, refusing fields the format lacks (a
// misspelt "expect" must not pass as no expectation).
func jsonUnmarshal(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// substitute replaces ${name} in every string of v: a string that is only
// a reference takes the variable's value with its type (a job id stays a
// number); inside a longer string the value is written in.
func substitute(v any, vars map[string]any) (any, error) {
	switch t := v.(type) {
	case string:
		if m := varRef.FindStringSubmatch(t); m != nil && m[0] == t {
			val, ok := vars[m[1]]
			if !ok {
				return nil, fmt.Errorf("unknown variable ${%s}", m[1])
			}
			return val, nil
		}
		var missing string
		s := varRef.ReplaceAllStringFunc(t, func(ref string) string {
			name := ref[2 : len(ref)-1]
			val, ok := vars[name]
			if !ok {
				missing = name
				return ref
			}
			if f, ok := val.(float64); ok {
				return fmt.Sprint(int64(f))
			}
			return fmt.Sprint(val)
		})
		if missing != "" {
			return nil, fmt.Errorf("unknown variable ${%s}", missing)
		}
		return s, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			s, err := substitute(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			s, err := substitute(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

// match reports where actual differs from expected: an object matches when
// every key of the expected one matches (a null expects the key unset or
// null), an array when it has as many elements and each matches, a scalar
// when equal.
func match(path string, expected, actual any) error {
	switch e := expected.(type) {
	case nil:
		if actual != nil {
			return fmt.Errorf("%s: expected null, got %s", path, show(actual))
		}
		return nil
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object, got %s", path, show(actual))
		}
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := match(path+"."+k, e[k], a[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return fmt.Errorf("%s: expected an array, got %s", path, show(actual))
		}
		if len(a) != len(e) {
			return fmt.Errorf("%s: expected %d elements, got %d: %s", path, len(e), len(a), show(actual))
		}
		for i := range e {
			if err := match(fmt.Sprintf("%s[%d]", path, i), e[i], a[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(expected, actual) {
		return fmt.Errorf("%s: expected %s, got %s", path, show(expected), show(actual))
	}
	return nil
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// lookup follows a dotted path (numbers index arrays) into a result.
func lookup(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			val, ok := t[part]
			if !ok {
				return nil, fmt.Errorf("no %q in %s", part, show(v))
			}
			v = val
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("no element %q in %s", part, show(v))
			}
			v = t[i]
		default:
			return nil, fmt.Errorf("no %q in %s", part, show(v))
		}
	}
	return v, nil
}

// canonical gives a result the types JSON decoding gives the expectations
// (numbers float64, objects map[string]any), so the two compare.
func canonical(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// runScenario runs sc's steps in order with d; run is the scenario's
// unique prefix, ${run} in the file. It returns the first mismatch.
func runScenario(ctx context.Context, d driver, sc scenario, run string) error {
	vars := map[string]any{"run": run}
	for i, st := range sc.Steps {
		if err := runStep(ctx, d, st, vars); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.Op, err)
		}
	}
	return nil
}

func runStep(ctx context.Context, d driver, st step, vars map[string]any) error {
	if st.Expect != nil && st.Error != nil {
		return errors.New("a step expects a result or an error, not both")
	}
	args := map[string]any{}
	if st.Args != nil {
		a, err := substitute(st.Args, vars)
		if err != nil {
			return err
		}
		args = a.(map[string]any)
	}
	expect, err := substitute(st.Expect, vars)
	if err != nil {
		return err
	}
	var expectErr *expectedError
	if st.Error != nil {
		e, err := substitute(map[string]any{"kind": st.Error.Kind, "field": st.Error.Field}, vars)
		if err != nil {
			return err
		}
		m := e.(map[string]any)
		expectErr = &expectedError{Kind: m["kind"].(string), Field: m["field"].(string)}
	}
	deadline := time.Now().Add(time.Duration(st.WithinMS) * time.Millisecond)
	for {
		result, err := attemptStep(ctx, d, st.Op, args, expect, expectErr)
		if err == nil {
			for name, path := range st.Save {
				v, err := lookup(result, path)
				if err != nil {
					return fmt.Errorf("save %s: %w", name, err)
				}
				vars[name] = v
			}
			return nil
		}
		if st.WithinMS == 0 || time.Now().After(deadline) {
			if st.WithinMS > 0 {
				return fmt.Errorf("not within %d ms: %w", st.WithinMS, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func attemptStep(ctx context.Context, d driver, op string, args map[string]any, expect any, expectErr *expectedError) (map[string]any, error) {
	result, err := d.call(ctx, op, args)
	var se *stepError
	if err != nil && !errors.As(err, &se) {
		return nil, err // the runner's own failure (an unknown op, a bad argument)
	}
	if expectErr != nil {
		if se == nil {
			return nil, fmt.Errorf("expected error %s, got result %s", expectErr.Kind, show(result))
		}
		if se.Kind != expectErr.Kind {
			return nil, fmt.Errorf("expected error %s, got %w", expectErr.Kind, se)
		}
		if expectErr.Field != "" && se.Field != expectErr.Field {
			return nil, fmt.Errorf("expected error %s naming field %q, got %w", expectErr.Kind, expectErr.Field, se)
		}
		return map[string]any{}, nil
	}
	if se != nil {
		return nil, fmt.Errorf("unexpected error: %w", se)
	}
	result, err = canonical(result)
	if err != nil {
		return nil, err
	}
	if expect != nil {
		if err := match("result", expect, result); err != nil {
			return nil, err
		}
	}
	return result, nil
}
