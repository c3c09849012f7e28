package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/view"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

func newHistoryCommand(s *session) *cobra.Command {
	var number int64
	cmd := &cobra.Command{
		Use:   "history NAME [--revision N]",
		Short: "List a PodCliqueSet's revisions; with --revision, how that revision's template differs from the spec's",
		Example: `  kubectl lockstep history disagg
  kubectl lockstep history disagg --revision 1`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := pcsOnly("history", args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("revision") {
				return s.revisionDiff(cmd.Context(), name, number)
			}
			return s.history(cmd.Context(), name)
		},
	}
	cmd.Flags().Int64Var(&number, "revision", 0, "Show the template diff of this revision against the one the spec asks for.")
	return cmd
}

func sortRevisions(revs []appsv1.ControllerRevision) {
	slices.SortFunc(revs, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
}

func (s *session) history(ctx context.Context, name string) error {
	pcs, err := s.getPCS(ctx, name)
	if err != nil {
		return err
	}
	revs, err := s.revisions(ctx, name)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tNAME\tAGE\tROLLOUT\tIMAGES")
	for i := range revs {
		cr := &revs[i]
		var marks []string
		if cr.Name == pcs.Status.CurrentRevision {
			marks = append(marks, "current")
		}
		if cr.Name == pcs.Status.UpdateRevision {
			marks = append(marks, "update")
		}
		images := "?"
		if _, t, err := revision.Decode(cr); err == nil {
			images = imagesByRole(t)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", cr.Revision, cr.Name, view.Duration(time.Since(cr.CreationTimestamp.Time)), orDash(strings.Join(marks, ",")), images)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// imagesByRole is "role=image ..." with roles of the same images folded:
// "frontend=a:v1 prefill-leader,prefill-worker=b:v1".
func imagesByRole(t *v1alpha1.PodCliqueSetTemplateSpec) string {
	var order []string
	roles := map[string][]string{}
	for i := range t.Cliques {
		img := imagesOf(t.Cliques[i].Template.Spec.Containers)
		if _, ok := roles[img]; !ok {
			order = append(order, img)
		}
		roles[img] = append(roles[img], t.Cliques[i].Name)
	}
	var out []string
	for _, img := range order {
		out = append(out, strings.Join(roles[img], ",")+"="+img)
	}
	return strings.Join(out, " ")
}

func (s *session) revisionDiff(ctx context.Context, name string, number int64) error {
	pcs, err := s.getPCS(ctx, name)
	if err != nil {
		return err
	}
	revs, err := s.revisions(ctx, name)
	if err != nil {
		return err
	}
	var cr *appsv1.ControllerRevision
	var kept []string
	for i := range revs {
		kept = append(kept, fmt.Sprint(revs[i].Revision))
		if revs[i].Revision == number {
			cr = &revs[i]
		}
	}
	if cr == nil {
		return usage("PodCliqueSet %s has no revision %d (kept: %s)", name, number, strings.Join(kept, ", "))
	}
	_, old, err := revision.Decode(cr)
	if err != nil {
		return err
	}
	a, err := yaml.Marshal(old)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(&pcs.Spec.Template)
	if err != nil {
		return err
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: fmt.Sprintf("revision %d (%s)", cr.Revision, cr.Name), ToFile: "spec.template (revision " + orDash(pcs.Status.UpdateRevision) + ")",
		Context: 3,
	})
	if err != nil {
		return err
	}
	if diff == "" {
		fmt.Fprintf(s.out, "revision %d (%s) has the template the spec asks for\n", cr.Revision, cr.Name)
		return nil
	}
	_, err = fmt.Fprint(s.out, diff)
	return err
}
