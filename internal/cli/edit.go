package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
)

// patch changes the PodCliqueSet with edit and writes it as a merge patch that
// fails if someone else wrote in between.
func (s *session) patch(ctx context.Context, name string, edit func(*v1alpha1.PodCliqueSet) error) (*v1alpha1.PodCliqueSet, error) {
	return patchObject(ctx, s, kindPodCliqueSet, name, &v1alpha1.PodCliqueSet{}, edit)
}

// patchFW changes the FederatedWorkload with edit and writes it as a merge
// patch that fails if someone else wrote in between.
func (s *session) patchFW(ctx context.Context, name string, edit func(*fleetv1alpha1.FederatedWorkload) error) (*fleetv1alpha1.FederatedWorkload, error) {
	return patchObject(ctx, s, kindFederatedWorkload, name, &fleetv1alpha1.FederatedWorkload{}, edit)
}

// patchObject reads the object k name into obj, changes it with edit and
// writes the change as a merge patch that fails if someone else wrote in
// between. Then it reads the object again and applies edit to that: the
// controllers write status all through a rollout, and an edit decides from
// what it reads (promote's next partition), so it is made again, never
// written over a newer object.
func patchObject[T client.Object](ctx context.Context, s *session, k kind, name string, obj T, edit func(T) error) (T, error) {
	var none T
	empty := obj.DeepCopyObject().(T)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj = empty.DeepCopyObject().(T)
		if err := s.read(ctx, k, name, obj); err != nil {
			return err
		}
		base := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		if err := edit(obj); err != nil {
			return err
		}
		if err := s.client.Patch(ctx, obj, base); err != nil {
			return fmt.Errorf("patching %s %s/%s: %w", k, s.ns, name, err)
		}
		return nil
	})
	if err != nil {
		return none, err
	}
	return obj, nil
}

func newPauseCommand(s *session, pause bool) *cobra.Command {
	verb, short, done := "pause", "Hold a rollout where it is (a PodCliqueSet's spec.paused, a FederatedWorkload's spec.rolloutStrategy.paused)", "paused"
	if !pause {
		verb, short, done = "resume", "Let a paused rollout go on", "resumed"
	}
	return &cobra.Command{
		Use:   verb + " NAME | fw/NAME",
		Short: short,
		Args:  oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := target(verb, args[0], kindPodCliqueSet, kindFederatedWorkload)
			if err != nil {
				return err
			}
			if k == kindFederatedWorkload {
				_, err = s.patchFW(cmd.Context(), name, func(fw *fleetv1alpha1.FederatedWorkload) error {
					fw.Spec.RolloutStrategy.Paused = pause
					return nil
				})
			} else {
				_, err = s.patch(cmd.Context(), name, func(p *v1alpha1.PodCliqueSet) error {
					p.Spec.Paused = pause
					return nil
				})
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s/%s %s\n", k.resource(), name, done)
			return nil
		},
	}
}

func newPromoteCommand(s *session) *cobra.Command {
	var partition int32
	var full bool
	cmd := &cobra.Command{
		Use:   "promote NAME | fw/NAME [--partition N | --full]",
		Short: "Move a staged rollout on: lower the partition by one unit, to N, or to 0 (--full)",
		Example: `  kubectl lockstep promote disagg              # one more replica
  kubectl lockstep promote disagg --partition 2
  kubectl lockstep promote disagg --full
  kubectl lockstep promote fw/web --partition 4  # fleet-wide: 4 units stay old`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := target("promote", args[0], kindPodCliqueSet, kindFederatedWorkload)
			if err != nil {
				return err
			}
			set := cmd.Flags().Changed("partition")
			if set && full {
				return usage("--partition and --full exclude each other")
			}
			if set && partition < 0 {
				return usage("--partition must not be negative")
			}
			if k == kindFederatedWorkload {
				return s.promoteFW(cmd.Context(), name, set, partition, full)
			}
			var to int32
			pcs, err := s.patch(cmd.Context(), name, func(p *v1alpha1.PodCliqueSet) error {
				ru := p.Spec.UpdateStrategy.RollingUpdate
				if ru == nil {
					ru = &v1alpha1.PodCliqueSetRollingUpdate{}
					p.Spec.UpdateStrategy.RollingUpdate = ru
				}
				now := int32(0)
				if ru.Partition != nil {
					now = *ru.Partition
				}
				var err error
				if to, err = nextPartition(kindPodCliqueSet, name, now, set, partition, full); err != nil {
					return err
				}
				ru.Partition = &to
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "podcliqueset/%s promoted: partition %d (replicas %d and up update)\n", name, to, to)
			if pcs.Spec.Paused {
				fmt.Fprintf(s.out, "note: it is paused; nothing moves until `resume %s`\n", name)
			}
			return nil
		},
	}
	cmd.Flags().Int32Var(&partition, "partition", 0, "Set the partition to N: replicas with index N and up are updated.")
	cmd.Flags().BoolVar(&full, "full", false, "Set the partition to 0: update every replica.")
	return cmd
}

func newRestartCommand(s *session) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "restart NAME | fw/NAME [--role R]",
		Short: "Replace every pod (or a role's) through a normal rollout, by stamping the pod templates",
		Long: `restart sets the ` + AnnotationRestartedAt + ` annotation on the pod templates of
every clique, or of one role (a standalone clique, or a scaling group and its
cliques): a new revision, rolled out under the PodCliqueSet's update strategy.

On a FederatedWorkload (fw/NAME) it stamps the member template's pod template
(spec.template.spec.template; every clique's, or --role's, for a PodCliqueSet
template): a new revision the hub rolls out over the fleet under
spec.rolloutStrategy, as any template change.`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := target("restart", args[0], kindPodCliqueSet, kindFederatedWorkload)
			if err != nil {
				return err
			}
			if k == kindFederatedWorkload {
				return s.restartFW(cmd.Context(), name, role)
			}
			stamp := time.Now().UTC().Format(time.RFC3339)
			var touched []string
			if _, err := s.patch(cmd.Context(), name, func(p *v1alpha1.PodCliqueSet) error {
				cliques, err := cliquesOfRole(&p.Spec.Template, role)
				if err != nil {
					return err
				}
				for _, c := range cliques {
					t := &p.Spec.Template.Clique(c).Template
					if t.Annotations == nil {
						t.Annotations = map[string]string{}
					}
					t.Annotations[AnnotationRestartedAt] = stamp
				}
				touched = cliques
				return nil
			}); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "podcliqueset/%s restarting %s (follow it with `status %s`)\n", name, strings.Join(touched, ", "), name)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "Restart only this role: a standalone clique or a scaling group.")
	return cmd
}

// cliquesOfRole are the cliques a role names: all when role is empty, the
// clique itself, or the cliques of a scaling group.
func cliquesOfRole(t *v1alpha1.PodCliqueSetTemplateSpec, role string) ([]string, error) {
	var all []string
	for i := range t.Cliques {
		all = append(all, t.Cliques[i].Name)
	}
	if role == "" {
		return all, nil
	}
	if g := t.ScalingGroup(role); g != nil {
		return g.CliqueNames, nil
	}
	if t.Clique(role) != nil {
		if g := t.ScalingGroupOf(role); g != nil {
			return nil, usage("clique %s is in scaling group %s: restart the group (--role %s); a group replica is replaced whole", role, g.Name, g.Name)
		}
		return []string{role}, nil
	}
	roles := all
	for _, g := range t.PodCliqueScalingGroups {
		roles = append(roles, g.Name)
	}
	return nil, usage("no role %q: roles are %s", role, strings.Join(roles, ", "))
}

func newUndoCommand(s *session) *cobra.Command {
	var to string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "undo NAME [--to-revision N]",
		Short: "Roll the pod templates back to the previous revision, or to revision N, and report what the operator did",
		Long: `undo sets the ` + v1alpha1.AnnotationRollbackTo + ` annotation; the operator copies that
revision's pod templates into the spec and rolls them out under the same
strategy, or refuses. undo waits for its answer (the RollbackStarted,
RollbackSkipped or RollbackFailed Event) and prints it: exit status 0 when the
rollback started or was not needed, 1 when it failed, 3 when the operator did
not answer within --timeout. Follow the rollback itself with status.`,
		Example: `  kubectl lockstep undo disagg && kubectl lockstep status disagg
  kubectl lockstep undo disagg --to-revision 1`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := pcsOnly("undo", args[0])
			if err != nil {
				return err
			}
			return s.undo(cmd.Context(), name, to, timeout)
		},
	}
	cmd.Flags().StringVar(&to, "to-revision", v1alpha1.RollbackToPrevious, "The revision to go back to: a number from `history`, or \"previous\".")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "How long to wait for the operator's answer.")
	return cmd
}

// rollbackReasons are the Events the operator answers the annotation with.
var rollbackReasons = map[string]int{"RollbackStarted": verdict.Complete, "RollbackSkipped": verdict.Complete, "RollbackFailed": verdict.Failed}

func (s *session) undo(ctx context.Context, name, to string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := s.watch(ctx, name, true)
	if err != nil {
		return err
	}
	before, err := w.rollbackEvents(ctx)
	if err != nil {
		return err
	}
	if _, err := s.patch(ctx, name, func(p *v1alpha1.PodCliqueSet) error {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.AnnotationRollbackTo] = to
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "podcliqueset/%s: asked the operator to roll back to %s\n", name, describeTarget(to))
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(s.out, "no answer from the operator within %s (is it running?); the annotation %s stays until it acts\n", timeout, v1alpha1.AnnotationRollbackTo)
			return exitWith(verdict.TimedOut)
		case <-w.changed:
		}
		now, err := w.rollbackEvents(ctx)
		if err != nil {
			return err
		}
		for key, e := range now {
			if seriesCount(before[key]) == seriesCount(e) {
				continue
			}
			fmt.Fprintf(s.out, "%s: %s\n", e.Reason, e.Note)
			return exitWith(rollbackReasons[e.Reason])
		}
	}
}

func describeTarget(to string) string {
	if to == v1alpha1.RollbackToPrevious {
		return "the previous revision"
	}
	return "revision " + to
}

// rollbackEvents are the operator's rollback Events about the PodCliqueSet.
func (w *watcher) rollbackEvents(ctx context.Context) (map[string]*eventsv1.Event, error) {
	var events eventsv1.EventList
	if err := w.cache.List(ctx, &events, client.InNamespace(w.ns)); err != nil {
		return nil, err
	}
	out := map[string]*eventsv1.Event{}
	for i := range events.Items {
		e := &events.Items[i]
		if _, ok := rollbackReasons[e.Reason]; ok && e.Regarding.Name == w.name && e.Regarding.Kind == "PodCliqueSet" {
			out[e.Name] = e
		}
	}
	return out, nil
}

// seriesCount tells a repeated Event from the first: the events API counts
// repeats in series.count.
func seriesCount(e *eventsv1.Event) int32 {
	if e == nil {
		return 0
	}
	if e.Series != nil {
		return e.Series.Count
	}
	return 1
}

func imagesOf(containers []corev1.Container) string {
	var out []string
	for _, c := range containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

// nextPartition is where promote takes a partition of now: to 0 with full, to
// partition when set, else one unit lower; a partition of 0 holds nothing
// back to promote.
func nextPartition(k kind, name string, now int32, set bool, partition int32, full bool) (int32, error) {
	switch {
	case full:
		return 0, nil
	case set:
		return partition, nil
	case now == 0:
		return 0, &ExitError{Code: verdict.Failed, Err: fmt.Errorf("%s %s has partition 0: nothing is held back", k, name)}
	}
	return now - 1, nil
}

func newApproveCommand(s *session) *cobra.Command {
	var gate string
	cmd := &cobra.Command{
		Use:   "approve NAME|fw/NAME [--gate G]",
		Short: "Open the gate a rollout awaits approval at: a PodCliqueSet's, or a FederatedWorkload's stage gate (or gate G of the rollout under way)",
		Long: `Approve writes the annotation lockstep.dev/approved-revision=<updateRevision>@<gate>.
The approval names the rollout's revision, so it never opens a gate of a later
rollout. Without --gate it approves the gate the status names
(status.updateProgress.gate of a PodCliqueSet, status.gate of a
FederatedWorkload); an approval given while that gate still soaks counts once
the soak is over.`,
		Example: `  kubectl lockstep approve disagg                    # the gate it waits at
  kubectl lockstep approve disagg --gate replicas-2   # ahead of time
  kubectl lockstep approve fw/web                     # the stage gate the fleet waits at`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := target("approve", args[0], kindPodCliqueSet, kindFederatedWorkload)
			if err != nil {
				return err
			}
			var approved, soaking string
			// approve sets the annotation on an object waiting at waiting
			// (nil for none) with update revision rev.
			approve := func(annotations *map[string]string, waiting *v1alpha1.GateStatus, rev string) error {
				g := gate
				if g == "" && waiting != nil {
					g = waiting.Name
					if waiting.Reason == v1alpha1.ReasonSoaking {
						soaking = " (it still soaks; the approval counts once the soak is over)"
					}
				}
				if g == "" {
					return &ExitError{Code: verdict.Failed, Err: fmt.Errorf("%s %s waits at no gate: nothing to approve (name one with --gate)", k.resource(), name)}
				}
				if rev == "" {
					return &ExitError{Code: verdict.Failed, Err: fmt.Errorf("%s %s has no update revision yet: nothing to approve", k.resource(), name)}
				}
				approved = v1alpha1.ApprovalOf(rev, g)
				if *annotations == nil {
					*annotations = map[string]string{}
				}
				(*annotations)[v1alpha1.AnnotationApprovedRevision] = approved
				return nil
			}
			if k == kindFederatedWorkload {
				_, err = s.patchFW(cmd.Context(), name, func(fw *fleetv1alpha1.FederatedWorkload) error {
					return approve(&fw.Annotations, fw.Status.Gate, fw.Status.UpdateRevision)
				})
			} else {
				_, err = s.patch(cmd.Context(), name, func(p *v1alpha1.PodCliqueSet) error {
					var waiting *v1alpha1.GateStatus
					if up := p.Status.UpdateProgress; up != nil {
						waiting = up.Gate
					}
					return approve(&p.Annotations, waiting, p.Status.UpdateRevision)
				})
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s/%s approved: %s%s\n", k.resource(), name, approved, soaking)
			return nil
		},
	}
	cmd.Flags().StringVar(&gate, "gate", "", "Approve this gate (replicas-N, replica-I-step-K, or stage-<stage> of a FederatedWorkload) rather than the one waiting now.")
	return cmd
}
