package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/queue"
)

const debugUsage = `usage (each asks the running operator at its listen address):
  addon-operator module list [-o table|json|yaml]
  addon-operator module values NAME [-g] [-o yaml|json]   the module's values; -g adds global
  addon-operator module config NAME [-g] [-o yaml|json]   the module's ConfigMap section; -g adds global
  addon-operator module render NAME                       the module's chart rendered with its values
  addon-operator global values [-o yaml|json]
  addon-operator global config [-o yaml|json]
  addon-operator queue list [-o table|json|yaml]
  addon-operator hook list [-o table|json|yaml]
The operator is found through ADDON_OPERATOR_LISTEN_ADDRESS (and ADDON_OPERATOR_LISTEN_PORT),
as it was started with; --address overrides`

// debugCmd is one debug subcommand: its endpoint, whether it takes a
// module name, whether it prints the answer as it comes (a rendered chart)
// and how it prints as a table (nil: never a table).
type debugCmd struct {
	path     string
	needName bool
	raw      bool
	table    func(w io.Writer, body []byte) error
}

var debugCmds = map[string]debugCmd{
	"module list":   {path: "/debug/modules", table: modulesTable},
	"module values": {path: "/debug/modules/{name}/values", needName: true},
	"module config": {path: "/debug/modules/{name}/config", needName: true},
	"module render": {path: "/debug/modules/{name}/render", needName: true, raw: true},
	"global values": {path: "/debug/global/values"},
	"global config": {path: "/debug/global/config"},
	"queue list":    {path: "/queue?format=json", table: queuesTable},
	"hook list":     {path: "/debug/hooks", table: hooksTable},
}

// debugCommand runs `module|global|queue|hook SUBCOMMAND [NAME]` against
// the running operator.
func debugCommand(group string, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(debugUsage)
	}
	name := group + " " + args[0]
	dc, ok := debugCmds[name]
	if !ok {
		return fmt.Errorf("unknown command %q\n%s", name, debugUsage)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	e := &env{}
	var listen listenOptions
	listen.bind(fs, e)
	address := fs.String("address", "", "the operator's HTTP address, http://host:port (default: from the listen address settings)")
	formats := "json or yaml"
	output := "yaml"
	if dc.table != nil {
		formats, output = "table, json or yaml", "table"
	}
	var global bool
	if !dc.raw {
		fs.StringVar(&output, "o", output, "output: "+formats)
		fs.StringVar(&output, "output", output, "the same as -o")
		if dc.needName {
			fs.BoolVar(&global, "g", false, "add the global section")
			fs.BoolVar(&global, "global", false, "the same as -g")
		}
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err == nil {
		err = errors.Join(e.errs...)
	}
	if err != nil {
		return err
	}
	if output == "text" { // the original's name of table output
		output = "table"
	}
	if valid := output == "json" || output == "yaml" || (output == "table" && dc.table != nil); !dc.raw && !valid {
		return fmt.Errorf("-o %s: want %s", output, formats)
	}
	path := dc.path
	if dc.needName {
		if len(pos) != 1 {
			return fmt.Errorf("usage: addon-operator %s NAME", name)
		}
		path = strings.Replace(path, "{name}", url.PathEscape(pos[0]), 1)
		if global {
			path += "?global=true"
		}
	} else if len(pos) != 0 {
		return fmt.Errorf("usage: addon-operator %s (takes no arguments)", name)
	}
	base, how, err := operatorURL(*address, listen)
	if err != nil {
		return err
	}
	body, err := askOperator(base, how, path)
	if err != nil {
		return err
	}
	switch {
	case dc.raw:
		_, err = out.Write(body)
	case output == "table":
		err = dc.table(out, body)
	case output == "json":
		err = writeJSON(out, body)
	default:
		var y []byte
		if y, err = yaml.JSONToYAML(body); err == nil {
			_, err = out.Write(y)
		}
	}
	return err
}

// parseInterspersed parses flags before, between and after positional
// arguments (module values NAME -o json), which flag.Parse alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
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
		rows = append(rows, []string{m.Name, strconv.Itoa(m.Order), strconv.FormatBool(m.Enabled), string(m.State), m.Path, m.LastError})
	}
	return table(w, "NAME\tORDER\tENABLED\tSTATE\tPATH\tLAST ERROR", rows)
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
			state := "waiting"
			if t.Running {
				state = "running"
			}
			rows = append(rows, []string{q.Name, strconv.Itoa(i + 1), t.Kind, t.Description, state, t.LastError})
		}
	}
	return table(w, "QUEUE\t#\tTASK\tDESCRIPTION\tSTATE\tLAST ERROR", rows)
}
