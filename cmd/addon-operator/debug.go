package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/queue"
)

// debugCmd is one command that asks the running operator: its endpoint,
// whether it takes a module name, whether it prints the answer as it comes
// (a rendered chart) and how it prints as a table (nil: never a table).
type debugCmd struct {
	use, short, example string
	path                string
	needName            bool
	raw                 bool
	table               func(w io.Writer, body []byte) error
}

// debugGroups are the commands that read /debug and /queue of the running
// operator, by group (docs/operator.md, "Settings and debug commands").
var debugGroups = []struct {
	use, short string
	cmds       []debugCmd
}{
	{"module", "Inspect the modules of a running operator", []debugCmd{
		{use: "list", short: "List the modules: order, enabled, state, health, readiness, directory, and why one failed, is disabled or not ready", path: "/debug/modules", table: modulesTable,
			example: "  addon-operator module list\n  addon-operator module list -o json"},
		{use: "values NAME", short: "Print a module's values (-g adds the global ones)", path: "/debug/modules/{name}/values", needName: true,
			example: "  addon-operator module values ingress-nginx -g"},
		{use: "config NAME", short: "Print a module's ConfigMap section (-g adds the global one)", path: "/debug/modules/{name}/config", needName: true},
		{use: "render NAME", short: "Print a module's chart rendered with its values", path: "/debug/modules/{name}/render", needName: true, raw: true},
		{use: "diff NAME", short: "Print the live diff of a module's release: its objects that differ from the chart (Secret values redacted)", path: "/debug/modules/{name}/diff", needName: true, raw: true,
			example: "  addon-operator module diff ingress-nginx"},
	}},
	{"global", "Inspect the global values of a running operator", []debugCmd{
		{use: "values", short: "Print the global values", path: "/debug/global/values"},
		{use: "config", short: "Print the global ConfigMap section", path: "/debug/global/config"},
	}},
	{"queue", "Inspect the task queues of a running operator", []debugCmd{
		{use: "list", short: "List the queues and their tasks", path: "/queue?format=json", table: queuesTable},
	}},
	{"hook", "Inspect the hooks of a running operator", []debugCmd{
		{use: "list", short: "List the hooks and their bindings", path: "/debug/hooks", table: hooksTable},
	}},
}

// askOptions find the running operator: --address, or the listen address
// settings it was started with.
type askOptions struct {
	listen  listenOptions
	address string
	e       env
}

func (o *askOptions) bind(fs *pflag.FlagSet) {
	o.listen.bind(fs, &o.e)
	fs.StringVar(&o.address, "address", "", "the operator's HTTP address, http://host:port (default: from the listen address settings; kubectl port-forward to reach a pod)")
}

func (o *askOptions) url() (base, how string, err error) {
	if err := o.e.err(); err != nil {
		return "", "", err
	}
	return operatorURL(o.address, o.listen)
}

func newDebugCmds() []*cobra.Command {
	var groups []*cobra.Command
	for _, g := range debugGroups {
		var subs []*cobra.Command
		for _, dc := range g.cmds {
			subs = append(subs, dc.command())
		}
		groups = append(groups, groupCmd(g.use, g.short, subs...))
	}
	return groups
}

func (dc debugCmd) command() *cobra.Command {
	var ask askOptions
	var output string
	var global bool
	formats := []string{"yaml", "json"}
	if dc.table != nil {
		formats = []string{"table", "json", "yaml"}
	}
	args, argNames := exactArgs(0, ""), ""
	if dc.needName {
		args, argNames = exactArgs(1, "NAME"), "NAME"
	}
	cmd := &cobra.Command{
		Use:     dc.use,
		Short:   dc.short,
		Long:    dc.short + ".\n\nThe operator is found through ADDON_OPERATOR_LISTEN_ADDRESS (and ADDON_OPERATOR_LISTEN_PORT),\nas it was started with; --address overrides.",
		Example: dc.example,
		Args:    args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !dc.raw {
				if err := checkOutput(&output, formats...); err != nil {
					return err
				}
			}
			path := dc.path
			if argNames != "" {
				path = strings.Replace(path, "{name}", url.PathEscape(args[0]), 1)
				if global {
					path += "?global=true"
				}
			}
			base, how, err := ask.url()
			if err != nil {
				return err
			}
			body, err := askOperator(base, how, path)
			if err != nil {
				return err
			}
			return printAnswer(cmd.OutOrStdout(), dc, output, body)
		},
	}
	ask.bind(cmd.Flags())
	if !dc.raw {
		outputFlag(cmd.Flags(), &output, formats...)
		if dc.needName {
			cmd.Flags().BoolVarP(&global, "global", "g", false, "add the global section")
		}
	}
	return cmd
}

func printAnswer(out io.Writer, dc debugCmd, output string, body []byte) error {
	switch {
	case dc.raw:
		_, err := out.Write(body)
		return err
	case output == "table":
		return dc.table(out, body)
	case output == "json":
		return writeJSON(out, body)
	}
	y, err := yaml.JSONToYAML(body)
	if err != nil {
		return err
	}
	_, err = out.Write(y)
	return err
}

// operatorURL is where the running operator is asked: --address, or its
// listen address on this host; how says which setting that came from.
func operatorURL(address string, listen listenOptions) (base, how string, err error) {
	if address != "" {
		return address, "--address", nil
	}
	how = "ADDON_OPERATOR_LISTEN_ADDRESS"
	if listen.Address == "" && listen.Port == "" {
		how = "the default listen address :" + defaultListenPort
	}
	base, err = listen.url()
	return base, how, err
}

// askOperator GETs path from the operator at base; an operator that cannot
// be reached, or answers an error, is an error that says where it looked
// and why (how: the setting base came from).
func askOperator(base, how, path string) ([]byte, error) {
	base = strings.TrimRight(base, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	// straight to the operator: a proxy from the environment would make
	// the request come from elsewhere, which the debug endpoints refuse
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(base + path)
	if err != nil {
		return nil, fmt.Errorf("the operator is not reachable at %s (from %s): %w; is it running there? From outside its pod use kubectl exec, or kubectl port-forward and --address", base, how, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the operator at %s answered %s: %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

func writeJSON(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("the operator's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}

// table writes rows under a header, aligned.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func modulesTable(w io.Writer, body []byte) error {
	var v struct{ Modules []lifecycle.DebugModule }
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	var rows [][]string
	for _, m := range v.Modules {
		rows = append(rows, []string{m.Name, strconv.Itoa(m.Order), strconv.FormatBool(m.Enabled), string(m.State), healthOf(m), readyOf(m), m.Path, noteOf(m)})
	}
	return table(w, "NAME\tORDER\tENABLED\tSTATE\tHEALTH\tREADY\tPATH\tLAST ERROR / REASON", rows)
}

// readyOf is its readiness hook's last answer: "-" without one (or none
// yet), else true or false.
func readyOf(m lifecycle.DebugModule) string {
	if m.Readiness == nil {
		return "-"
	}
	return strconv.FormatBool(m.Readiness.Ready)
}

// noteOf is the last error or, for a module its enabled script disabled,
// the reason the script gave; a readiness hook that failed says why.
func noteOf(m lifecycle.DebugModule) string {
	switch {
	case m.LastError != "":
		return m.LastError
	case m.DisabledReason != "":
		return "disabled: " + m.DisabledReason
	case m.Readiness != nil && !m.Readiness.Ready && m.Readiness.Message != "":
		return "not ready: " + m.Readiness.Message
	case m.Readiness != nil && !m.Readiness.Ready:
		return "not ready: " + m.Readiness.Error
	}
	return ""
}

func hooksTable(w io.Writer, body []byte) error {
	var v struct{ Hooks []lifecycle.DebugHook }
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	var rows [][]string
	for _, h := range v.Hooks {
		var bs []string
		for _, b := range h.Bindings {
			s := b.Binding
			switch {
			case b.Order != nil:
				s += "(" + strconv.FormatFloat(*b.Order, 'g', -1, 64) + ")"
			case b.Crontab != "":
				s += ":" + b.Name + "(" + b.Crontab + ")"
			case b.Kind != "":
				s += ":" + b.Name + "(" + b.Kind + ")"
			case b.Name != "":
				s += ":" + b.Name
			}
			bs = append(bs, s)
		}
		module := h.Module
		if module == "" {
			module = "(global)"
		}
		rows = append(rows, []string{h.Name, module, strings.Join(bs, " ")})
	}
	return table(w, "HOOK\tMODULE\tBINDINGS", rows)
}

func queuesTable(w io.Writer, body []byte) error {
	var v struct{ Queues []queue.QueueInfo }
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	var rows [][]string
	for _, q := range v.Queues {
		if len(q.Tasks) == 0 {
			rows = append(rows, []string{q.Name, "", "(empty)", "", "", ""})
		}
		for i, t := range q.Tasks {
			state, detail := "waiting", t.LastError
			switch {
			case t.Running:
				state = "running"
			case t.Held != "" && t.HeldSince != nil:
				// held, not failing (docs/operator.md, "Health waits")
				state, detail = "held", "since "+t.HeldSince.Local().Format(time.TimeOnly)+": "+t.Held
			}
			rows = append(rows, []string{q.Name, strconv.Itoa(i + 1), t.Kind, t.Description, state, detail})
		}
	}
	return table(w, "QUEUE\t#\tTASK\tDESCRIPTION\tSTATE\tLAST ERROR / HELD", rows)
}

// healthOf is a module's HEALTH column: "-" while it is not tracked
// (disabled, not deployed yet, or health is off).
func healthOf(m lifecycle.DebugModule) string {
	if m.Health == "" {
		return "-"
	}
	return string(m.Health)
}
