package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
)

type statusOptions struct {
	watch    bool
	timeout  time.Duration
	revision string
}

const statusLong = `status follows a rollout and prints one line each time where it stands
changes, until it is over; its exit status says how it ended:

  0  complete: every replica runs the update revision (a Placement: its
     decisions are settled)
  1  failed: the progress deadline passed, a rollback failed, the object was
     deleted, the revision given with --revision was replaced by another, or
     a FederatedWorkload or Placement is Stalled (a member object conflict,
     a spec the hub cannot act on)
  2  usage error, or no such object
  3  --timeout passed while the rollout was still progressing (without
     --watch: it is progressing now)
  4  halted by design: paused, partition reached, or OnDelete waiting for
     deletions; it will not finish until someone acts

NAME is a PodCliqueSet; name a FederatedWorkload as fw/NAME and a Placement as
placement/NAME (both on a fleet's hub).`

func newStatusCommand(s *session) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status NAME | KIND/NAME [--watch] [--timeout D] [--revision R]",
		Short: "Wait for a rollout and exit with how it ended (0 complete, 1 failed, 3 timed out, 4 halted)",
		Long:  statusLong,
		Example: `  kubectl lockstep status disagg --timeout 10m
  kubectl lockstep status disagg --watch=false     # where it stands now, at once
  kubectl lockstep status disagg --revision 3      # fail if another revision replaces 3
  kubectl lockstep status fw/web --timeout 10m     # a FederatedWorkload, on the hub`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := target("status", args[0], kindPodCliqueSet, kindFederatedWorkload, kindPlacement)
			if err != nil {
				return err
			}
			switch k {
			case kindFederatedWorkload:
				return s.statusFederated(cmd.Context(), name, o)
			case kindPlacement:
				if o.revision != "" {
					return usage("--revision is for PodCliqueSets and FederatedWorkloads: a Placement has no revisions")
				}
				return s.statusPlacement(cmd.Context(), name, o)
			}
			return s.status(cmd.Context(), name, o)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", true, "Follow the rollout until it is over; --watch=false prints where it stands and exits.")
	f.DurationVar(&o.timeout, "timeout", 0, "Give up after this long, exit status 3 (0: never).")
	f.StringVar(&o.revision, "revision", "", "The revision to wait for: a number from `history` or a ControllerRevision name; for a FederatedWorkload, its status.updateRevision.")
	return cmd
}

// verdictOf decides where a watched object's rollout stands.
type verdictOf func(ctx context.Context, w *watcher) (verdict.Verdict, error)

func (s *session) status(ctx context.Context, name string, o *statusOptions) error {
	started := time.Now()
	pcs, err := s.getPCS(ctx, name)
	if err != nil {
		return err
	}
	want, err := s.revisionName(ctx, name, o.revision)
	if err != nil {
		return err
	}
	now := verdict.Of(verdict.Input{PCS: pcs, Revision: want})
	return s.await(ctx, o, now, func(ctx context.Context) (*watcher, error) { return s.watch(ctx, name, true) },
		func(ctx context.Context, w *watcher) (verdict.Verdict, error) {
			pcs, err := w.pcs(ctx)
			if err != nil {
				return verdict.Verdict{}, err
			}
			failed, err := w.rollbackFailed(ctx, started)
			if err != nil {
				return verdict.Verdict{}, err
			}
			return verdict.Of(verdict.Input{PCS: pcs, Revision: want, RollbackFailed: failed}), nil
		})
}

func (s *session) statusFederated(ctx context.Context, name string, o *statusOptions) error {
	fw, err := s.getFW(ctx, name)
	if err != nil {
		return err
	}
	now := verdict.OfFederated(verdict.FederatedInput{FW: fw, Revision: o.revision})
	return s.await(ctx, o, now, func(ctx context.Context) (*watcher, error) { return s.watchFederated(ctx, name) },
		func(ctx context.Context, w *watcher) (verdict.Verdict, error) {
			fw, err := w.federated(ctx)
			return verdict.OfFederated(verdict.FederatedInput{FW: fw, Revision: o.revision}), err
		})
}

func (s *session) statusPlacement(ctx context.Context, name string, o *statusOptions) error {
	pl := &fleetv1alpha1.Placement{}
	if err := s.read(ctx, kindPlacement, name, pl); err != nil {
		return err
	}
	return s.await(ctx, o, verdict.OfPlacement(pl), func(ctx context.Context) (*watcher, error) { return s.watchPlacement(ctx, name, false) },
		func(ctx context.Context, w *watcher) (verdict.Verdict, error) {
			pl := &fleetv1alpha1.Placement{}
			ok, err := w.get(ctx, pl)
			if !ok {
				pl = nil
			}
			return verdict.OfPlacement(pl), err
		})
}

// await prints now and exits without --watch; with it, it prints a line each
// time the verdict changes until the verdict is final or --timeout passes.
func (s *session) await(ctx context.Context, o *statusOptions, now verdict.Verdict, start func(context.Context) (*watcher, error), decide verdictOf) error {
	if !o.watch {
		fmt.Fprintln(s.out, now.Line)
		return exitWith(now.Code)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	w, err := start(ctx)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fmt.Fprintf(s.out, "timed out after %s before the watch started\n", o.timeout)
			return exitWith(verdict.TimedOut)
		}
		return err
	}
	last := ""
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(s.out, "timed out after %s, still progressing: %s\n", o.timeout, last)
			return exitWith(verdict.TimedOut)
		case <-w.changed:
		}
		v, err := decide(ctx, w)
		if err != nil {
			return err
		}
		if v.Line != last {
			fmt.Fprintf(s.out, "%s  %s\n", time.Now().Format("15:04:05"), v.Line)
			last = v.Line
		}
		if v.Final {
			return exitWith(v.Code)
		}
	}
}

func exitWith(code int) error {
	if code == 0 {
		return nil
	}
	return &ExitError{Code: code}
}

// rollbackFailed is the message of the newest RollbackFailed Event about the
// PodCliqueSet seen after since.
func (w *watcher) rollbackFailed(ctx context.Context, since time.Time) (string, error) {
	var events eventsv1.EventList
	if err := w.cache.List(ctx, &events, client.InNamespace(w.ns)); err != nil {
		return "", err
	}
	msg := ""
	var at time.Time
	for i := range events.Items {
		e := &events.Items[i]
		if e.Reason != "RollbackFailed" || e.Regarding.Name != w.name || e.Regarding.Kind != "PodCliqueSet" {
			continue
		}
		if t := lastSeen(e); t.After(since.Add(-time.Second)) && t.After(at) {
			msg, at = e.Note, t
		}
	}
	return msg, nil
}

// lastSeen is when an Event last happened, series included.
func lastSeen(e *eventsv1.Event) time.Time {
	t := e.EventTime.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	return t
}

// revisionName resolves --revision: a number from history, or a name.
func (s *session) revisionName(ctx context.Context, pcs, rev string) (string, error) {
	n, err := strconv.ParseInt(rev, 10, 64)
	if rev == "" || err != nil {
		return rev, nil
	}
	revs, err := s.revisions(ctx, pcs)
	if err != nil {
		return "", err
	}
	for i := range revs {
		if revs[i].Revision == n {
			return revs[i].Name, nil
		}
	}
	return "", usage("PodCliqueSet %s has no revision %d", pcs, n)
}

// revisions are the PodCliqueSet's ControllerRevisions, oldest first.
func (s *session) revisions(ctx context.Context, pcs string) ([]appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := s.client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs}); err != nil {
		return nil, fmt.Errorf("listing the revisions of PodCliqueSet %s: %w", pcs, err)
	}
	sortRevisions(list.Items)
	return list.Items, nil
}
