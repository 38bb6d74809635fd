package nodeadmin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/identitylease"
	"github.com/skiff-sh/skiff/internal/pki"
)

// Labels and Lease names the report reads.
const (
	NodeRoleLabelPrefix   = "node-role.kubernetes.io/"
	APIServerIdentityKey  = identitylease.Label
	APIServerIdentityName = identitylease.Value
	HostnameLabel         = "kubernetes.io/hostname"
	SchedulerLease        = "kube-scheduler"
	ControllerLease       = "kube-controller-manager"
)

// Report is what `skiff status` shows.
type Report struct {
	// ServerVersion is the answering API server's version.
	ServerVersion string              `json:"serverVersion,omitempty"`
	Nodes         []NodeStatus        `json:"nodes"`
	Etcd          *etcdapi.MemberList `json:"etcd,omitempty"`
	// EtcdError says why the etcd members could not be listed.
	EtcdError string `json:"etcdError,omitempty"`
	// Errors are the reads that failed (without etcd quorum, lists of Nodes and Leases do).
	Errors     []string          `json:"errors,omitempty"`
	APIServers []APIServerStatus `json:"apiServers"`
	Leaders    []LeaderStatus    `json:"leaders"`
	// Certificates are this node's (<data-dir>/pki), when the data dir could be read.
	Certificates []CertificateStatus `json:"certificates,omitempty"`
}

// CertificateStatus is one of the node's certificates.
type CertificateStatus struct {
	Name     string    `json:"name"`
	NotAfter time.Time `json:"notAfter,omitzero"`
	// ExpiresIn is the time left, rounded to hours ("expired" once past).
	ExpiresIn string `json:"expiresIn,omitempty"`
	// Soon is true within pki.RenewWithin of the expiry.
	Soon  bool   `json:"soon,omitempty"`
	Error string `json:"error,omitempty"`
}

// NodeStatus is one Node.
type NodeStatus struct {
	Name          string   `json:"name"`
	Roles         []string `json:"roles"`
	Ready         string   `json:"ready"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Version       string   `json:"version,omitempty"`
	InternalIP    string   `json:"internalIP,omitempty"`
}

// APIServerStatus is one API server's identity Lease.
type APIServerStatus struct {
	Identity string `json:"identity"`
	Host     string `json:"host,omitempty"`
	// Healthy is true while the server renews its Lease (identitylease.Live: renewed within
	// 30 s), the rule the encryption-key rotation waits by. The Lease's own duration (an hour)
	// says nothing about a server killed a minute ago.
	Healthy bool `json:"healthy"`
	// RenewedAgo is how long ago the Lease was last renewed.
	RenewedAgo string `json:"renewedAgo,omitempty"`
}

// LeaderStatus is a leader-election Lease.
type LeaderStatus struct {
	Component string     `json:"component"`
	Holder    string     `json:"holder,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// Fresh is true while the holder renews within the Lease's duration.
	Fresh bool `json:"fresh"`
}

// Inputs is everything the report is computed from.
type Inputs struct {
	Now           time.Time
	ServerVersion string
	Nodes         []corev1.Node
	Leases        []coordinationv1.Lease // kube-system Leases
	Etcd          *etcdapi.MemberList
	EtcdErr       error
	// Errs are the other reads that failed.
	Errs []error
	// Certificates are the node's certificate files (pki.ReadExpiries of <data-dir>/pki).
	Certificates []pki.CertExpiry
}

// BuildReport computes the report (pure).
func BuildReport(in Inputs) Report {
	r := Report{ServerVersion: in.ServerVersion, Etcd: in.Etcd, Nodes: []NodeStatus{}, APIServers: []APIServerStatus{}, Leaders: []LeaderStatus{}}
	if in.EtcdErr != nil {
		r.EtcdError = in.EtcdErr.Error()
	}
	for _, err := range in.Errs {
		r.Errors = append(r.Errors, err.Error())
	}
	for _, n := range in.Nodes {
		ns := NodeStatus{Name: n.Name, Roles: NodeRoles(&n), Ready: "Unknown", Unschedulable: n.Spec.Unschedulable, Version: n.Status.NodeInfo.KubeletVersion}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ns.Ready = string(c.Status)
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && ns.InternalIP == "" {
				ns.InternalIP = a.Address
			}
		}
		r.Nodes = append(r.Nodes, ns)
	}
	slices.SortFunc(r.Nodes, func(a, b NodeStatus) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range in.Certificates {
		cs := CertificateStatus{Name: c.Name, Error: c.Error}
		if c.Error == "" {
			cs.NotAfter = c.NotAfter
			cs.Soon = !in.Now.Add(pki.RenewWithin).Before(c.NotAfter)
			if left := c.NotAfter.Sub(in.Now); left > 0 {
				cs.ExpiresIn = left.Round(time.Hour).String()
			} else {
				cs.ExpiresIn = "expired"
			}
		}
		r.Certificates = append(r.Certificates, cs)
	}
	leaders := map[string]*LeaderStatus{}
	for _, l := range in.Leases {
		switch {
		case identitylease.IsIdentity(&l):
			as := APIServerStatus{Identity: l.Name, Host: l.Labels[HostnameLabel], Healthy: identitylease.Live(&l, in.Now)}
			if ago, ok := identitylease.RenewedAgo(&l, in.Now); ok {
				as.RenewedAgo = ago.Round(time.Second).String()
			}
			r.APIServers = append(r.APIServers, as)
		case l.Name == SchedulerLease || l.Name == ControllerLease:
			ls := &LeaderStatus{Component: l.Name, Fresh: fresh(&l, in.Now)}
			if l.Spec.HolderIdentity != nil {
				ls.Holder = *l.Spec.HolderIdentity
			}
			if l.Spec.AcquireTime != nil {
				t := l.Spec.AcquireTime.Time
				ls.Since = &t
			}
			leaders[l.Name] = ls
		}
	}
	slices.SortFunc(r.APIServers, func(a, b APIServerStatus) int { return strings.Compare(a.Identity, b.Identity) })
	for _, name := range []string{SchedulerLease, ControllerLease} {
		if ls, ok := leaders[name]; ok {
			r.Leaders = append(r.Leaders, *ls)
		} else {
			r.Leaders = append(r.Leaders, LeaderStatus{Component: name})
		}
	}
	return r
}

// NodeRoles are the roles of a node from its node-role.kubernetes.io/<role> labels, sorted.
func NodeRoles(n *corev1.Node) []string {
	roles := []string{}
	for k := range n.Labels {
		if role, ok := strings.CutPrefix(k, NodeRoleLabelPrefix); ok && role != "" {
			roles = append(roles, role)
		}
	}
	slices.Sort(roles)
	return roles
}

// fresh reports whether a leader-election Lease was renewed within its duration: a candidate
// takes over only after that, so until then the holder is the leader. (API server identity
// Leases are judged by identitylease.Live instead.)
func fresh(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// Gather reads the inputs of the report through the API. Reads that fail (the lists need etcd
// quorum; the membership list does not) are reported in the inputs: a status screen is most
// needed when the cluster is broken. Only an unreachable API server is an error.
func Gather(ctx context.Context, cs kubernetes.Interface, etcdClient *etcdapi.Client, now time.Time) (Inputs, error) {
	in := Inputs{Now: now}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return in, fmt.Errorf("API server version: %w", err)
	}
	in.ServerVersion = v.GitVersion
	if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		in.Errs = append(in.Errs, fmt.Errorf("list nodes: %w", err))
	} else {
		in.Nodes = nodes.Items
	}
	if leases, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); err != nil {
		in.Errs = append(in.Errs, fmt.Errorf("list kube-system leases: %w", err))
	} else {
		in.Leases = leases.Items
	}
	in.Etcd, in.EtcdErr = etcdClient.List(ctx)
	return in, nil
}

// WriteJSON prints the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText prints the report as one screen of tables.
func (r Report) WriteText(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "API server version: %s\n", orDash(r.ServerVersion))
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "ERROR: %s\n", e)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tROLES\tREADY\tVERSION\tINTERNAL-IP")
	for _, n := range r.Nodes {
		ready := n.Ready
		if n.Unschedulable {
			ready += ",SchedulingDisabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, orDash(strings.Join(n.Roles, ",")), ready, orDash(n.Version), orDash(n.InternalIP))
	}
	fmt.Fprintln(tw)
	switch {
	case r.EtcdError != "":
		fmt.Fprintf(tw, "ETCD: %s\n", r.EtcdError)
	case r.Etcd != nil:
		q := "quorum"
		if !r.Etcd.Quorum {
			q = "NO QUORUM"
		}
		fmt.Fprintf(tw, "ETCD (%d members, %s)\n", len(r.Etcd.Members), q)
		for _, a := range r.Etcd.Alarms {
			fmt.Fprintf(tw, "ALARM: %s\n", a)
		}
		fmt.Fprintln(tw, "MEMBER\tID\tLEADER\tHEALTHY\tLEARNER\tRAFT-INDEX\tDB-SIZE\tVERSION\tPEER-URLS\tERROR")
		for _, m := range r.Etcd.Members {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%d\t%d\t%s\t%s\t%s\n", orDash(m.Name), m.ID, m.IsLeader, m.Healthy, m.IsLearner,
				m.RaftIndex, m.DBSize, orDash(m.Version), strings.Join(m.PeerURLs, ","), orDash(m.Error))
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "API SERVER\tHOST\tHEALTHY\tRENEWED")
	if len(r.APIServers) == 0 {
		fmt.Fprintln(tw, "(no apiserver identity Leases)\t-\t-\t-")
	}
	for _, a := range r.APIServers {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s ago\n", a.Identity, orDash(a.Host), a.Healthy, orDash(a.RenewedAgo))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "COMPONENT\tLEADER\tSINCE\tFRESH")
	for _, l := range r.Leaders {
		since := "-"
		if l.Since != nil {
			since = l.Since.UTC().Format(time.RFC3339) + " (" + now.Sub(*l.Since).Round(time.Second).String() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", l.Component, orDash(l.Holder), since, l.Fresh)
	}
	if len(r.Certificates) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "CERTIFICATE\tEXPIRES\tIN\tNOTE")
		for _, c := range r.Certificates {
			switch {
			case c.Error != "":
				fmt.Fprintf(tw, "%s\t-\t-\tUNREADABLE: %s\n", c.Name, c.Error)
			default:
				note := "-"
				if c.Soon {
					note = "EXPIRES WITHIN 30 DAYS"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.NotAfter.UTC().Format(time.RFC3339), c.ExpiresIn, note)
			}
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
