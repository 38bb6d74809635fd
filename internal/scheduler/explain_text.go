package scheduler

import (
	"fmt"
	"io"
	"strings"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
)

// FormatExplanation renders an explanation for an operator (skiff explain): the summary, then per
// node its verdict; named nodes (detail) get every plugin's verdict and scores.
func FormatExplanation(w io.Writer, pod string, st explainv1.PodSchedulingExplanationStatus, detail bool) {
	fmt.Fprintf(w, "Pod %s (profile %s): %d of %d nodes are feasible.\n", pod, st.SchedulerName, st.FeasibleNodes, st.TotalNodes)
	if st.BoundTo != "" {
		fmt.Fprintf(w, "The pod is already bound to %s (evaluated as if it were pending).\n", st.BoundTo)
	}
	for _, v := range st.PreFilter {
		if v.Code != "Success" && v.Code != "Skip" {
			fmt.Fprintf(w, "PreFilter %s: %s %s\n", v.Plugin, v.Code, strings.Join(v.Reasons, "; "))
		}
	}
	if st.Message != "" {
		fmt.Fprintf(w, "Cluster-wide: %s\n", st.Message)
	}
	if len(st.Summary) > 0 {
		fmt.Fprintln(w, "Nodes rejected, by reason:")
		for _, rc := range st.Summary {
			fmt.Fprintf(w, "  %6d  %s\n", rc.Count, rc.Reason)
		}
	}
	if detail {
		for _, n := range st.Nodes {
			verdict := "does NOT fit"
			if n.Feasible {
				verdict = "fits"
			}
			fmt.Fprintf(w, "\nPod %s %s node %s.\n", pod, verdict, n.Name)
			fmt.Fprintf(w, "%-32s %-10s %-30s %s\n", "PLUGIN", "POINT", "RESULT", "REASONS")
			for _, v := range n.Verdicts {
				fmt.Fprintf(w, "%-32s %-10s %-30s %s\n", v.Plugin, v.ExtensionPoint, v.Code, strings.Join(v.Reasons, "; "))
			}
			if n.Feasible {
				fmt.Fprintf(w, "Score %d, rank %d of %d feasible nodes:\n", n.TotalScore, n.Rank, st.FeasibleNodes)
				for _, s := range n.Scores {
					fmt.Fprintf(w, "  %-32s %d\n", s.Plugin, s.Score)
				}
			}
		}
		return
	}
	fmt.Fprintf(w, "\n%-40s %-9s %s\n", "NODE", "FEASIBLE", "REASONS / SCORE")
	for _, n := range st.Nodes {
		if n.Feasible {
			fmt.Fprintf(w, "%-40s %-9s score %d, rank %d\n", n.Name, "yes", n.TotalScore, n.Rank)
			continue
		}
		fmt.Fprintf(w, "%-40s %-9s %s\n", n.Name, "no", strings.Join(n.Reasons, "; "))
	}
}
