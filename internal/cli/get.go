package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
	"github.com/lockstep-dev/lockstep/internal/cli/view"
)

type getOptions struct {
	watch, pods, noColor, untilDone bool
	output                          string
	timeout                         time.Duration
}

func newGetCommand(s *session) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get pcs NAME [-w] [--pods] [-o json|yaml]",
		Short: "Show a PodCliqueSet's rollout: header, what it waits on, and its tree of replicas, roles and pods",
		Long: `get shows where a PodCliqueSet's rollout stands: status and reason, strategy,
role step, partition, pause, revisions and images, replica counts, time since
the rollout started and until its progress deadline; the pods it waits on and
why; and a tree in index order (replica, clique or scaling group, group replica,
clique, pods) with icons and tags: rev, updating, held, surge, step i/N,
gang:NotScheduled, ready n/m.

Icons: ✔ every pod ready, ◐ some ready, ✖ none ready, ○ not scheduled, ⊘ terminating.`,
		Example: `  kubectl lockstep get pcs disagg
  kubectl lockstep get pcs disagg -w --pods
  kubectl lockstep get pcs disagg -w --until-done --timeout 5m --no-color`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usage("expected KIND NAME (get pcs NAME), got %d arguments", len(args))
			}
			return resolveKind(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.get(cmd.Context(), args[1], o)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", false, "Redraw on every change of the PodCliqueSet, its children or its pods.")
	f.BoolVar(&o.pods, "pods", false, "List every pod instead of counts.")
	f.BoolVar(&o.noColor, "no-color", false, "No colours (the default when the output is not a terminal).")
	f.StringVarP(&o.output, "output", "o", "", "Print the PodCliqueSet as json or yaml instead.")
	f.BoolVar(&o.untilDone, "until-done", false, "With -w: stop when the rollout completes, stalls or halts (exit status as `status`).")
	f.DurationVar(&o.timeout, "timeout", 0, "With -w: stop after this long (0: never).")
	return cmd
}

func (s *session) get(ctx context.Context, name string, o *getOptions) error {
	pcs, err := s.getPCS(ctx, name)
	if err != nil {
		return err
	}
	switch o.output {
	case "":
	case "json", "yaml":
		return s.printObject(pcs, o.output)
	default:
		return usage("--output must be json or yaml, got %q", o.output)
	}
	tty := isTerminal(s.out)
	opts := view.Options{Pods: o.pods, Color: tty && !o.noColor}
	if !o.watch {
		snap, err := load(ctx, s.client, s.ns, name, pcs)
		if err != nil {
			return err
		}
		snap.Now = time.Now()
		return view.Render(s.out, snap, opts)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	w, err := s.watch(ctx, name, false)
	if err != nil {
		return err
	}
	// On a terminal the clock fields move every second; in a pipe only changes print.
	var tick <-chan time.Time
	if tty {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changed:
		case <-tick:
		}
		pcs, err := w.pcs(ctx)
		if err != nil {
			return err
		}
		if pcs == nil {
			fmt.Fprintf(s.out, "PodCliqueSet %s/%s was deleted\n", s.ns, name)
			return &ExitError{Code: verdict.Failed}
		}
		snap, err := load(ctx, w.cache, s.ns, name, pcs)
		if err != nil {
			return err
		}
		snap.Now = time.Now()
		var frame bytes.Buffer
		if err := view.Render(&frame, snap, opts); err != nil {
			return err
		}
		if !bytes.Equal(frame.Bytes(), last) {
			if tty {
				fmt.Fprint(s.out, "\x1b[H\x1b[2J")
			} else if last != nil {
				fmt.Fprintf(s.out, "\n--- %s\n", snap.Now.Format("15:04:05"))
			}
			_, _ = s.out.Write(frame.Bytes())
			last = frame.Bytes()
		}
		if v := verdict.Of(verdict.Input{PCS: pcs}); o.untilDone && v.Final {
			if v.Code != verdict.Complete {
				return &ExitError{Code: v.Code}
			}
			return nil
		}
	}
}

func (s *session) printObject(pcs *v1alpha1.PodCliqueSet, format string) error {
	pcs.APIVersion, pcs.Kind = v1alpha1.GroupVersion.String(), "PodCliqueSet"
	pcs.ManagedFields = nil
	if format == "yaml" {
		b, err := yaml.Marshal(pcs)
		if err != nil {
			return err
		}
		_, err = s.out.Write(b)
		return err
	}
	b, err := json.MarshalIndent(pcs, "", "    ")
	if err != nil {
		return err
	}
	_, err = s.out.Write(append(b, '\n'))
	return err
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
