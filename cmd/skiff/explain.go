package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/scheduler"
)

// runExplain answers an operator's "why does this pod not fit": the scheduler's per-node verdicts,
// computed by the API server (a PodSchedulingExplanation created as the kubeconfig's user), for
// every node or, with --node, every plugin's verdict and score on the named nodes.
func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default: $KUBECONFIG, else <data-dir>/admin.kubeconfig)")
	dataDir := fs.String("data-dir", defaultDataDir(), "node data directory whose admin kubeconfig to use when --kubeconfig is empty")
	namespace := fs.String("namespace", "default", "the pod's namespace")
	fs.StringVar(namespace, "n", "default", "the pod's namespace (shorthand)")
	node := fs.String("node", "", "the node(s) to check the pod against, comma-separated, with every plugin's verdict (default: every node, rejections only)")
	output := fs.String("o", "", "output format: empty for text, json for the PodSchedulingExplanation")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: skiff explain [-n NAMESPACE] [--node NODE[,NODE...]] [-o json] POD")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("skiff explain: name one pod")
	}
	path := *kubeconfig
	if path == "" {
		path = filepath.Join(*dataDir, "admin.kubeconfig")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	var nodes []string
	if *node != "" {
		nodes = strings.Split(*node, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := createExplanation(ctx, client, *namespace, fs.Arg(0), nodes)
	if err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	scheduler.FormatExplanation(stdout, *namespace+"/"+fs.Arg(0), out.Status, len(nodes) > 0)
	return nil
}

// createExplanation POSTs a PodSchedulingExplanation and returns the API server's answer.
func createExplanation(ctx context.Context, client kubernetes.Interface, namespace, pod string, nodes []string) (*explainv1.PodSchedulingExplanation, error) {
	req := &explainv1.PodSchedulingExplanation{
		TypeMeta:   metav1.TypeMeta{APIVersion: explainv1.SchemeGroupVersion.String(), Kind: explainv1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec:       explainv1.PodSchedulingExplanationSpec{PodName: pod, NodeNames: nodes},
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	res := client.CoreV1().RESTClient().Post().
		AbsPath("/apis", explainv1.GroupName, explainv1.SchemeGroupVersion.Version, "namespaces", namespace, explainv1.Resource).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Body(body).Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		// Error decodes the Status the server answered (Raw's error does not).
		return nil, fmt.Errorf("explain pod %s/%s: %w", namespace, pod, res.Error())
	}
	out := &explainv1.PodSchedulingExplanation{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("explain pod %s/%s: decode the answer: %w", namespace, pod, err)
	}
	return out, nil
}
