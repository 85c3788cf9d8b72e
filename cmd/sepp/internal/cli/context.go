package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Environment variables that pick the cluster when no flag does.
const (
	// EnvAddr is the node address list, comma-separated, like --addr.
	EnvAddr = "SEPP_ADDR"
	// EnvContext names the context to use instead of the selected one.
	EnvContext = "SEPP_CONTEXT"
)

// defaultAddr is the address used when no flag, variable or context names one.
const defaultAddr = "localhost:50051"

// Context is a saved way to reach one cluster, like a `nats context`: its
// node addresses, TLS files and the name of the environment variable that
// holds its token. A context never holds the token itself, so the file can
// be shared and backed up without leaking a secret.
type Context struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Addrs       []string `json:"addrs"`
	CA          string   `json:"ca,omitempty"`
	Cert        string   `json:"cert,omitempty"`
	Key         string   `json:"key,omitempty"`
	ServerName  string   `json:"server_name,omitempty"`
	TLS         bool     `json:"tls,omitempty"`
	// TokenEnv names the environment variable the token is read from.
	TokenEnv string `json:"token_env,omitempty"`
}

var contextNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func validContextName(name string) error {
	if !contextNameRE.MatchString(name) {
		return usageErrorf("context name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// contextStore keeps contexts as <config dir>/sepp/context/NAME.json and the
// selected one's name in <config dir>/sepp/context.txt (the layout of the
// nats CLI). The config dir is the user's (os.UserConfigDir:
// $XDG_CONFIG_HOME or ~/.config on Linux).
type contextStore struct{ dir string }

func openContextStore() (contextStore, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return contextStore{}, fmt.Errorf("contexts: no user config dir: %w", err)
	}
	return contextStore{dir: filepath.Join(base, "sepp")}, nil
}

func (s contextStore) path(name string) string {
	return filepath.Join(s.dir, "context", name+".json")
}

func (s contextStore) selectedPath() string { return filepath.Join(s.dir, "context.txt") }

func (s contextStore) load(name string) (*Context, error) {
	if err := validContextName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Failure{Class: ClassNotFound, Code: ExitNotFound, Err: fmt.Errorf("no context %q (sepp context ls lists them)", name)}
	}
	if err != nil {
		return nil, err
	}
	var c Context
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("context %q (%s): %w", name, s.path(name), err)
	}
	c.Name = name
	return &c, nil
}

func (s contextStore) save(c *Context) error {
	if err := os.MkdirAll(filepath.Join(s.dir, "context"), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path(c.Name) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path(c.Name))
}

func (s contextStore) remove(name string) error {
	if err := validContextName(name); err != nil {
		return err
	}
	err := os.Remove(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return &Failure{Class: ClassNotFound, Code: ExitNotFound, Err: fmt.Errorf("no context %q", name)}
	}
	if err != nil {
		return err
	}
	if sel, _ := s.selected(); sel == name {
		return os.Remove(s.selectedPath())
	}
	return nil
}

// selected is the name in context.txt, "" when none is selected.
func (s contextStore) selected() (string, error) {
	data, err := os.ReadFile(s.selectedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(data)), err
}

func (s contextStore) selectName(name string) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(s.selectedPath(), []byte(name+"\n"), 0o600)
}

func (s contextStore) names() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "context"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() && contextNameRE.MatchString(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// resolve fills in the addresses and security settings a command uses.
// Precedence, highest first: a flag; the context named by --context; the
// environment (SEPP_ADDR, SEPP_CA, ...); the context named by $SEPP_CONTEXT
// or selected with `sepp context use`; localhost:50051.
func (e *env) resolve(cmd *cobra.Command) (addrs []string, sec securityFlags, err error) {
	addrs, sec = e.addrs, e.sec
	addrFlag := cmd.Flags().Changed("addr")
	var explicit, selected *Context
	if e.contextName != "" {
		store, err := openContextStore()
		if err != nil {
			return nil, sec, err
		}
		if explicit, err = store.load(e.contextName); err != nil {
			return nil, sec, err
		}
	} else if name, err := currentContextName(); err != nil {
		return nil, sec, err
	} else if name != "" {
		store, err := openContextStore()
		if err != nil {
			return nil, sec, err
		}
		if selected, err = store.load(name); err != nil {
			return nil, sec, fmt.Errorf("the current context (%s): %w", contextSource(), err)
		}
	}
	if !addrFlag {
		switch {
		case explicit != nil:
			addrs = explicit.Addrs
		case os.Getenv(EnvAddr) != "":
			addrs = splitAddrs(os.Getenv(EnvAddr))
		case selected != nil:
			addrs = selected.Addrs
		default:
			addrs = []string{defaultAddr}
		}
	}
	for _, c := range []*Context{explicit, selected} {
		if c == nil {
			continue
		}
		if c == selected {
			// The environment outranks a context that was not named on the
			// command line: clientOptions reads it for any empty setting.
			sec.ca = orEnv(sec.ca, EnvCA)
			sec.cert = orEnv(sec.cert, EnvCert)
			sec.key = orEnv(sec.key, EnvKey)
			sec.serverName = orEnv(sec.serverName, EnvServerName)
			sec.token = orEnv(sec.token, EnvToken)
		}
		sec.ca = first(sec.ca, c.CA)
		sec.cert = first(sec.cert, c.Cert)
		sec.key = first(sec.key, c.Key)
		sec.serverName = first(sec.serverName, c.ServerName)
		sec.tls = sec.tls || c.TLS
		if sec.token == "" && c.TokenEnv != "" {
			sec.token = os.Getenv(c.TokenEnv)
			if sec.token == "" {
				return nil, sec, usageErrorf("context %q reads its token from $%s, which is not set", c.Name, c.TokenEnv)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, sec, usageErrorf("no node address: give --addr, set $%s or save a context", EnvAddr)
	}
	return addrs, sec, nil
}

// currentContextName is $SEPP_CONTEXT, else the selected context, else "".
func currentContextName() (string, error) {
	if n := os.Getenv(EnvContext); n != "" {
		return n, nil
	}
	store, err := openContextStore()
	if err != nil {
		return "", nil // no config dir: no selected context
	}
	return store.selected()
}

func contextSource() string {
	if os.Getenv(EnvContext) != "" {
		return "$" + EnvContext
	}
	return "selected with sepp context use"
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (e *env) contextCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Save, select and list named ways to reach a cluster",
		Long: `A context remembers a cluster: its node addresses, TLS files and the name of
the environment variable holding its token (never the token). Commands use,
highest first: a flag; the context named by --context; $SEPP_ADDR, $SEPP_CA,
$SEPP_CERT, $SEPP_KEY, $SEPP_TOKEN; the context named by $SEPP_CONTEXT or
selected with "sepp context use"; localhost:50051.

Contexts live in the user's config dir (~/.config/sepp/context/NAME.json on
Linux), the selected one's name in ~/.config/sepp/context.txt.`,
		Example: `  sepp context save prod --addr n1:50051,n2:50051,n3:50051 --ca ca.pem --token-env PROD_SEPP_TOKEN --select
  sepp context ls
  sepp queues --context staging`,
	}
	var (
		description, tokenEnv string
		selectIt              bool
	)
	save := &cobra.Command{
		Use:   "save NAME",
		Short: "Save (or overwrite) a context from --addr and the TLS flags",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := validContextName(name); err != nil {
				return err
			}
			if e.sec.token != "" {
				return usageErrorf("a context keeps no token; name the variable that holds it with --token-env")
			}
			if tokenEnv != "" && !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(tokenEnv) {
				return usageErrorf("--token-env must be an environment variable name, got %q", tokenEnv)
			}
			addrs := e.addrs
			if !cmd.Flags().Changed("addr") {
				addrs = splitAddrs(os.Getenv(EnvAddr))
			}
			if len(addrs) == 0 {
				return usageErrorf("context save needs --addr (or $%s): the cluster's node addresses", EnvAddr)
			}
			for _, a := range addrs {
				if _, _, err := net.SplitHostPort(a); err != nil {
					return usageErrorf("--addr %q: want host:port: %v", a, err)
				}
			}
			c := &Context{Name: name, Description: description, Addrs: addrs, ServerName: e.sec.serverName, TLS: e.sec.tls, TokenEnv: tokenEnv}
			for _, f := range []struct {
				flag string
				val  string
				dst  *string
			}{{"--ca", e.sec.ca, &c.CA}, {"--cert", e.sec.cert, &c.Cert}, {"--key", e.sec.key, &c.Key}} {
				if f.val == "" {
					continue
				}
				abs, err := filepath.Abs(f.val)
				if err != nil {
					return usageErrorf("%s %q: %v", f.flag, f.val, err)
				}
				if _, err := os.Stat(abs); err != nil {
					return usageErrorf("%s: %v", f.flag, err)
				}
				*f.dst = abs
			}
			if (c.Cert == "") != (c.Key == "") {
				return usageErrorf("--cert and --key go together")
			}
			store, err := openContextStore()
			if err != nil {
				return err
			}
			if err := store.save(c); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "saved context %s (%s)\n", name, store.path(name))
			if selectIt {
				if err := store.selectName(name); err != nil {
					return err
				}
				fmt.Fprintf(out, "using context %s\n", name)
			}
			return nil
		},
	}
	save.Flags().StringVar(&description, "description", "", "a note shown by context ls")
	save.Flags().StringVar(&tokenEnv, "token-env", "", "name of the environment variable that holds this cluster's token")
	save.Flags().BoolVar(&selectIt, "select", false, "also make it the current context")

	use := &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a saved context the current one",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeContextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := openContextStore()
			if err != nil {
				return err
			}
			if _, err := store.load(args[0]); err != nil {
				return err
			}
			if err := store.selectName(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "using context %s\n", args[0])
			if os.Getenv(EnvContext) != "" && os.Getenv(EnvContext) != args[0] {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: $%s=%s overrides it in this shell\n", EnvContext, os.Getenv(EnvContext))
			}
			return nil
		},
	}
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List saved contexts; * marks the current one",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := openContextStore()
			if err != nil {
				return err
			}
			names, err := store.names()
			if err != nil {
				return err
			}
			current, err := currentContextName()
			if err != nil {
				return err
			}
			var ctxs []*Context
			for _, n := range names {
				c, err := store.load(n)
				if err != nil {
					return err
				}
				ctxs = append(ctxs, c)
			}
			out := cmd.OutOrStdout()
			if e.json {
				type view struct {
					*Context
					Current bool `json:"current"`
				}
				views := make([]view, 0, len(ctxs))
				for _, c := range ctxs {
					views = append(views, view{c, c.Name == current})
				}
				return e.printJSON(out, views)
			}
			if len(ctxs) == 0 {
				fmt.Fprintln(out, "no contexts saved (sepp context save NAME --addr ...)")
				return nil
			}
			rows := make([][]string, 0, len(ctxs))
			for _, c := range ctxs {
				mark := ""
				if c.Name == current {
					mark = "*"
				}
				rows = append(rows, []string{c.Name + mark, strings.Join(c.Addrs, ","), orDash(c.Description)})
			}
			return table(out, "NAME\tADDRS\tDESCRIPTION", rows)
		},
	}
	rm := &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             "Delete a saved context",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeContextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := openContextStore()
			if err != nil {
				return err
			}
			if err := store.remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed context %s\n", args[0])
			return nil
		},
	}
	show := &cobra.Command{
		Use:               "show [NAME]",
		Short:             "Print a context (default: the current one)",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeContextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := currentContextName()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return &Failure{Class: ClassNotFound, Code: ExitNotFound, Err: errors.New("no current context (sepp context use NAME selects one)")}
			}
			store, err := openContextStore()
			if err != nil {
				return err
			}
			c, err := store.load(name)
			if err != nil {
				return err
			}
			return printContext(cmd.OutOrStdout(), e, c)
		},
	}
	cmd.AddCommand(save, use, ls, rm, show)
	return cmd
}

func printContext(out io.Writer, e *env, c *Context) error {
	if e.json {
		return e.printJSON(out, c)
	}
	token := "-"
	if c.TokenEnv != "" {
		state := "unset"
		if os.Getenv(c.TokenEnv) != "" {
			state = "set"
		}
		token = fmt.Sprintf("$%s (%s)", c.TokenEnv, state)
	}
	rows := [][]string{
		{"name", c.Name},
		{"description", orDash(c.Description)},
		{"addrs", strings.Join(c.Addrs, ",")},
		{"ca", orDash(c.CA)},
		{"cert", orDash(c.Cert)},
		{"key", orDash(c.Key)},
		{"server_name", orDash(c.ServerName)},
		{"tls", fmt.Sprint(c.TLS || c.CA != "" || c.Cert != "")},
		{"token", token},
	}
	return table(out, "FIELD\tVALUE", rows)
}

func completeContextNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	store, err := openContextStore()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, _ := store.names()
	return names, cobra.ShellCompDirectiveNoFileComp
}
