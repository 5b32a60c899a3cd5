// cilium-oracle answers network flows with Cilium's own policy engine, for topogate's tests.
//
// It reads one JSON request per line on stdin and writes one JSON answer per line on stdout.
// A request is a whole case: the agent's settings, the Namespaces, the policies (the objects as
// the API server would hand them to the agent: CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy,
// NetworkPolicy, ClusterNetworkPolicy), the endpoints (pods, entities, CIDRs) and the flows to
// decide between them. Everything is done with the agent's code of the pinned version:
//
//   - policies: the CRD parsers (CiliumNetworkPolicy.Parse, CiliumClusterwideNetworkPolicy.Parse,
//     which sanitize each rule as the agent does and refuse the whole object on an error),
//     policyutils.RulesToPolicyEntries, k8s.ParseNetworkPolicy and k8s.ParseClusterNetworkPolicy;
//   - identities: a pod's labels from k8s.GetPodMetadata, then labelsfilter with the configured
//     `labels` option; reserved identities from identity.LookupReservedIdentity; a CIDR's identity
//     from labels.GetCIDRLabels of the longest prefix the policies name that holds the address
//     (the agent's ipcache does a longest-prefix match over those prefixes);
//   - verdicts: policy.NewPolicyRepository, ComputeSelectorPolicy and DistillPolicy per endpoint,
//     and the map state's Lookup of the flow's key, as policy.LookupFlow does.
//
// Only pods are endpoints here: a side whose endpoint is an entity or a CIDR answers "none".
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	policyv1alpha2 "sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/cilium/cilium/pkg/endpoint/regeneration"
	envoypolicy "github.com/cilium/cilium/pkg/envoy/policy"
	"github.com/cilium/cilium/pkg/identity"
	"github.com/cilium/cilium/pkg/identity/identitymanager"
	"github.com/cilium/cilium/pkg/k8s"
	cilium_v2 "github.com/cilium/cilium/pkg/k8s/apis/cilium.io/v2"
	slim_corev1 "github.com/cilium/cilium/pkg/k8s/slim/k8s/api/core/v1"
	slim_networkingv1 "github.com/cilium/cilium/pkg/k8s/slim/k8s/api/networking/v1"
	"github.com/cilium/cilium/pkg/labels"
	"github.com/cilium/cilium/pkg/labelsfilter"
	"github.com/cilium/cilium/pkg/option"
	"github.com/cilium/cilium/pkg/policy"
	"github.com/cilium/cilium/pkg/policy/api"
	policytypes "github.com/cilium/cilium/pkg/policy/types"
	policyutils "github.com/cilium/cilium/pkg/policy/utils"
	testidentity "github.com/cilium/cilium/pkg/testutils/identity"
	testpolicy "github.com/cilium/cilium/pkg/testutils/policy"
	ciliumtypes "github.com/cilium/cilium/pkg/types"
	"github.com/cilium/cilium/pkg/u8proto"
)

// Settings are the agent options that change a verdict (the cilium-config keys in comments).
type Settings struct {
	ClusterName              string   `json:"clusterName"`              // cluster-name
	Labels                   []string `json:"labels"`                   // labels
	NodeLabels               []string `json:"nodeLabels"`               // node-labels
	PolicyCIDRMatchMode      []string `json:"policyCIDRMatchMode"`      // policy-cidr-match-mode
	EnableNodeSelectorLabels bool     `json:"enableNodeSelectorLabels"` // enable-node-selector-labels
	AllowLocalhost           string   `json:"allowLocalhost"`           // allow-localhost: auto, always, policy
	Enforcement              string   `json:"enforcement"`              // enable-policy: default, always, never
	// Where the kube-apiserver runs, which decides the labels of its identity: "remote-node"
	// (a node of the cluster other than the pod's), "host" (the pod's own node) or "world"
	// (outside the cluster, e.g. a managed control plane).
	APIServer                     string `json:"apiServer"`
	EnableK8sClusterNetworkPolicy bool   `json:"enableK8sClusterNetworkPolicy"` // enable-k8s-cluster-network-policy
}

type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

func (n Namespace) GetName() string              { return n.Name }
func (n Namespace) GetLabels() map[string]string { return n.Labels }

// Endpoint is one side of a flow: a pod, an entity ("world", "host", "remote-node",
// "kube-apiserver", "health", "init", "ingress", "unmanaged", "world-ipv4", "world-ipv6") or an
// address ("cidr", one IP). NodeLabels are a node's labels (host, remote-node) for
// enable-node-selector-labels.
type Endpoint struct {
	Name       string            `json:"name"`
	Pod        json.RawMessage   `json:"pod,omitempty"`
	Entity     string            `json:"entity,omitempty"`
	CIDR       string            `json:"cidr,omitempty"`
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
}

type Flow struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Port  int    `json:"port"`
	Proto string `json:"proto"`
}

type Request struct {
	Settings   Settings          `json:"settings"`
	Namespaces []Namespace       `json:"namespaces"`
	Policies   []json.RawMessage `json:"policies"`
	Endpoints  []Endpoint        `json:"endpoints"`
	Flows      []Flow            `json:"flows"`
}

type PolicyAnswer struct {
	// Why the agent does not import the object ("" when it does); Decode is true when the
	// object could not even be decoded into the agent's type.
	Error  string `json:"error"`
	Decode bool   `json:"decode,omitempty"`
	// Ignored names why an object is not read at all by this agent (a kind behind a flag).
	Ignored string `json:"ignored,omitempty"`
}

type EndpointAnswer struct {
	Name     string   `json:"name"`
	Identity uint32   `json:"identity"`
	Labels   []string `json:"labels"`
	Error    string   `json:"error,omitempty"`
}

// SideAnswer: "allowed", "denied", or "none" when that side is not a pod (no policy of its own).
type FlowAnswer struct {
	Egress          string `json:"egress"`
	Ingress         string `json:"ingress"`
	EgressRedirect  bool   `json:"egressRedirect,omitempty"`
	IngressRedirect bool   `json:"ingressRedirect,omitempty"`
	Error           string `json:"error,omitempty"`
}

type Answer struct {
	Version   string           `json:"version"`
	Policies  []PolicyAnswer   `json:"policies"`
	Endpoints []EndpointAnswer `json:"endpoints"`
	Flows     []FlowAnswer     `json:"flows"`
	Error     string           `json:"error,omitempty"`
}

const ciliumVersion = "v1.20.2"

var logger = slog.New(slog.NewTextHandler(io.Discard, nil))

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var req Request
			var ans Answer
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				ans = Answer{Version: ciliumVersion, Error: "bad request: " + jerr.Error()}
			} else {
				ans = answer(&req)
			}
			if eerr := enc.Encode(&ans); eerr != nil {
				fmt.Fprintln(os.Stderr, "cilium-oracle:", eerr)
				os.Exit(1)
			}
			out.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "cilium-oracle:", err)
			os.Exit(1)
		}
	}
}

func answer(req *Request) (ans Answer) {
	ans.Version = ciliumVersion
	defer func() {
		if r := recover(); r != nil {
			ans.Error = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	if err := configure(&req.Settings); err != nil {
		ans.Error = err.Error()
		return ans
	}
	entries, pans := parsePolicies(req)
	ans.Policies = pans

	nss := map[string]Namespace{}
	for _, ns := range req.Namespaces {
		nss[ns.Name] = ns
	}
	ids, eps, namedPorts := identities(req, nss, entries)
	ans.Endpoints = eps

	idmap := identity.IdentityMap{}
	for _, id := range ids.all() {
		idmap[id.ID] = id.LabelArray
	}
	// Every identity the agent would know, even those no flow names: a selector's answer
	// depends on which identities exist only through them, never on the rest.
	for ni, id := range reservedIdentities() {
		if _, ok := idmap[ni]; !ok {
			idmap[ni] = id.LabelArray
		}
	}
	idManager := identitymanager.NewIDManager(logger)
	// HTTP rules are translated for the proxy as the agent does (the oracle never runs Envoy).
	repo := policy.NewPolicyRepository(logger, idmap, nil, envoypolicy.NewEnvoyL7RulesTranslator(logger, nil), idManager,
		testpolicy.NewPolicyMetricsNoop())
	repo.GetSelectorCache().SetLocalIdentityNotifier(testidentity.NewDummyIdentityNotifier())
	repo.SetNamedPortsGetter(namedPorts)
	repo.UpdateIdentities(idmap, nil)
	if len(entries) > 0 {
		repo.MustAddPolicyEntries(entries)
	}

	policies := map[identity.NumericIdentity]*policy.EndpointPolicy{}
	endpointPolicy := func(ep *resolved) (*policy.EndpointPolicy, error) {
		if p, ok := policies[ep.id.ID]; ok {
			return p, nil
		}
		sp, _, err := repo.ComputeSelectorPolicy(ep.id)
		if err != nil {
			return nil, err
		}
		owner := &owner{id: uint64(ep.id.ID), ports: ep.ports}
		epp := sp.DistillPolicy(logger, owner, map[string]uint16{policy.FallbackRedirectID: math.MaxUint16})
		epp.Ready()
		policies[ep.id.ID] = epp
		return epp, nil
	}
	defer func() {
		for _, p := range policies {
			p.Detach(logger)
		}
	}()

	for _, f := range req.Flows {
		ans.Flows = append(ans.Flows, decide(f, ids, endpointPolicy))
	}
	return ans
}

// decide one flow: the sender's egress, then the receiver's ingress, each from the sender's or
// the receiver's distilled policy (a side that is not a pod has none).
func decide(f Flow, ids *identitySet, endpointPolicy func(*resolved) (*policy.EndpointPolicy, error)) FlowAnswer {
	src, dst := ids.byName[f.From], ids.byName[f.To]
	if src == nil || dst == nil {
		return FlowAnswer{Error: fmt.Sprintf("unknown endpoint in flow %s -> %s", f.From, f.To)}
	}
	proto, err := u8proto.ParseProtocol(f.Proto)
	if err != nil || f.Port < 1 || f.Port > 65535 {
		return FlowAnswer{Error: fmt.Sprintf("bad port %d/%s", f.Port, f.Proto)}
	}
	out := FlowAnswer{Egress: "none", Ingress: "none"}
	side := func(ep *resolved, key policytypes.Key) (string, bool, error) {
		epp, err := endpointPolicy(ep)
		if err != nil {
			return "", false, err
		}
		entry, _, _ := epp.Lookup(key)
		if entry.IsDeny() {
			return "denied", false, nil
		}
		return "allowed", entry.IsRedirectEntry(), nil
	}
	if src.pod {
		key := policy.EgressKey().WithIdentity(dst.id.ID).WithPortProto(proto, uint16(f.Port))
		if out.Egress, out.EgressRedirect, err = side(src, key); err != nil {
			return FlowAnswer{Error: err.Error()}
		}
	}
	if dst.pod {
		key := policy.IngressKey().WithIdentity(src.id.ID).WithPortProto(proto, uint16(f.Port))
		if out.Ingress, out.IngressRedirect, err = side(dst, key); err != nil {
			return FlowAnswer{Error: err.Error()}
		}
	}
	return out
}

// configure sets the agent's global options as its start-up would from cilium-config.
func configure(s *Settings) error {
	if s.ClusterName == "" {
		s.ClusterName = "default"
	}
	option.Config.ClusterName = s.ClusterName
	option.Config.ClusterID = 0
	option.Config.EnableIPv4 = true
	option.Config.EnableIPv6 = false
	option.Config.PolicyCIDRMatchMode = append([]string(nil), s.PolicyCIDRMatchMode...)
	option.Config.EnableNodeSelectorLabels = s.EnableNodeSelectorLabels
	option.Config.NodeLabels = append([]string(nil), s.NodeLabels...)
	option.Config.EnableK8sClusterNetworkPolicy = s.EnableK8sClusterNetworkPolicy
	option.Config.EnableL7Proxy = true
	option.Config.EnableICMPRules = true
	option.Config.EnableHostFirewall = false
	option.Config.EnableNonDefaultDenyPolicies = true
	localhost := strings.ToLower(s.AllowLocalhost)
	switch localhost {
	case "", option.AllowLocalhostAuto:
		// The agent in Kubernetes mode turns auto into always (daemon/cmd/daemon.go).
		localhost = option.AllowLocalhostAlways
	case option.AllowLocalhostAlways, option.AllowLocalhostPolicy:
	default:
		return fmt.Errorf("allow-localhost %q is not one of auto, always, policy", s.AllowLocalhost)
	}
	option.Config.UnsafeDaemonConfigOption.AllowLocalhost = localhost
	mode := s.Enforcement
	if mode == "" {
		mode = option.DefaultEnforcement
	}
	switch mode {
	case option.DefaultEnforcement, option.AlwaysEnforce, option.NeverEnforce:
	default:
		return fmt.Errorf("enable-policy %q is not one of default, always, never", s.Enforcement)
	}
	policy.SetPolicyEnabled(mode)
	switch s.APIServer {
	case "":
		s.APIServer = "remote-node"
	case "remote-node", "host", "world":
	default:
		return fmt.Errorf("apiServer %q is not one of remote-node, host, world", s.APIServer)
	}
	if err := labelsfilter.ParseLabelPrefixCfg(logger, s.Labels, s.NodeLabels, ""); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	api.InitEntities(s.ClusterName)
	return nil
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// parsePolicies turns each object into the entries the agent would add to its repository,
// or says why the agent refuses it (then none of it is added).
func parsePolicies(req *Request) (policytypes.PolicyEntries, []PolicyAnswer) {
	var all policytypes.PolicyEntries
	answers := make([]PolicyAnswer, len(req.Policies))
	for i, raw := range req.Policies {
		var tm typeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			answers[i] = PolicyAnswer{Error: err.Error(), Decode: true}
			continue
		}
		entries, ans := parsePolicy(tm, raw, &req.Settings)
		answers[i] = ans
		if ans.Error == "" && ans.Ignored == "" {
			all = append(all, entries...)
		}
	}
	return all, answers
}

func strictDecode(raw []byte, into any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func parsePolicy(tm typeMeta, raw []byte, s *Settings) (policytypes.PolicyEntries, PolicyAnswer) {
	switch {
	case tm.Kind == "CiliumNetworkPolicy" && strings.HasPrefix(tm.APIVersion, "cilium.io/"):
		var cnp cilium_v2.CiliumNetworkPolicy
		if err := strictDecode(raw, &cnp); err != nil {
			return nil, PolicyAnswer{Error: err.Error(), Decode: true}
		}
		if cnp.Namespace == "" {
			cnp.Namespace = "default" // kubectl apply puts it in the context's namespace
		}
		rules, err := cnp.Parse(logger, s.ClusterName)
		if err != nil {
			return nil, PolicyAnswer{Error: err.Error()}
		}
		return policyutils.RulesToPolicyEntries(rules), PolicyAnswer{}
	case tm.Kind == "CiliumClusterwideNetworkPolicy" && strings.HasPrefix(tm.APIVersion, "cilium.io/"):
		var ccnp cilium_v2.CiliumClusterwideNetworkPolicy
		if err := strictDecode(raw, &ccnp); err != nil {
			return nil, PolicyAnswer{Error: err.Error(), Decode: true}
		}
		rules, err := ccnp.Parse(logger, s.ClusterName)
		if err != nil {
			return nil, PolicyAnswer{Error: err.Error()}
		}
		return policyutils.RulesToPolicyEntries(rules), PolicyAnswer{}
	case tm.Kind == "NetworkPolicy" && tm.APIVersion == "networking.k8s.io/v1":
		var np slim_networkingv1.NetworkPolicy
		if err := strictDecode(raw, &np); err != nil {
			return nil, PolicyAnswer{Error: err.Error(), Decode: true}
		}
		entries, err := k8s.ParseNetworkPolicy(logger, policyClusterName(s), &np)
		if err != nil {
			return nil, PolicyAnswer{Error: err.Error()}
		}
		return entries, PolicyAnswer{}
	case tm.Kind == "ClusterNetworkPolicy" && strings.HasPrefix(tm.APIVersion, "policy.networking.k8s.io/"):
		if !s.EnableK8sClusterNetworkPolicy {
			return nil, PolicyAnswer{Ignored: "enable-k8s-cluster-network-policy is off: the agent does not watch ClusterNetworkPolicy"}
		}
		var kcnp policyv1alpha2.ClusterNetworkPolicy
		if err := strictDecode(raw, &kcnp); err != nil {
			return nil, PolicyAnswer{Error: err.Error(), Decode: true}
		}
		entries, err := k8s.ParseClusterNetworkPolicy(logger, policyClusterName(s), &kcnp)
		if err != nil {
			return nil, PolicyAnswer{Error: err.Error()}
		}
		return entries, PolicyAnswer{}
	}
	return nil, PolicyAnswer{Ignored: fmt.Sprintf("%s %s is not a policy kind the agent reads", tm.APIVersion, tm.Kind)}
}

// policyClusterName is what the agent's watcher hands the parsers: the local cluster's name,
// since policy-default-local-cluster defaults to true (clustermesh/types LocalClusterNameForPolicies).
func policyClusterName(s *Settings) string {
	return s.ClusterName
}

// resolved is an endpoint with the identity the agent gives it.
type resolved struct {
	id    *identity.Identity
	pod   bool
	ports ciliumtypes.NamedPortMap
}

type identitySet struct {
	byName   map[string]*resolved
	byLabels map[string]*identity.Identity
	next     map[identity.NumericIdentity]identity.NumericIdentity // per scope: the next free id
}

func (s *identitySet) all() []*identity.Identity {
	seen := map[identity.NumericIdentity]*identity.Identity{}
	for _, r := range s.byName {
		seen[r.id.ID] = r.id
	}
	out := make([]*identity.Identity, 0, len(seen))
	for _, id := range seen {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// allocate returns the identity of a label set: reserved when the agent has one for it, else one
// of the scope (global for pods, local for CIDRs, remote-node for labelled nodes), the same for
// the same labels.
func (s *identitySet) allocate(lbls labels.Labels, scope identity.NumericIdentity) *identity.Identity {
	if id := identity.LookupReservedIdentityByLabels(lbls); id != nil {
		return id
	}
	key := lbls.SortedList()
	if id, ok := s.byLabels[string(key)]; ok {
		return id
	}
	n, ok := s.next[scope]
	if !ok {
		n = scope + 1
		if scope == identity.IdentityScopeGlobal {
			n = identity.GetMinimalAllocationIdentity(0)
		}
	}
	s.next[scope] = n + 1
	id := identity.NewIdentity(n, lbls)
	s.byLabels[string(key)] = id
	return id
}

// portsGetter hands the repository every pod identity's named ports (egress named ports).
type portsGetter struct{ m ciliumtypes.NamedPortMultiMap }

func (g portsGetter) GetNamedPorts() ciliumtypes.NamedPortMultiMap { return g.m }

func identities(req *Request, nss map[string]Namespace, entries policytypes.PolicyEntries) (*identitySet, []EndpointAnswer, portsGetter) {
	set := &identitySet{
		byName:   map[string]*resolved{},
		byLabels: map[string]*identity.Identity{},
		next:     map[identity.NumericIdentity]identity.NumericIdentity{},
	}
	npm := ciliumtypes.NewNamedPortMultiMap()
	prefixes := policy.GetCIDRPrefixes(entries)
	var answers []EndpointAnswer
	for _, ep := range req.Endpoints {
		r, err := resolve(ep, req.Settings, nss, prefixes, set)
		a := EndpointAnswer{Name: ep.Name}
		if err != nil {
			a.Error = err.Error()
			answers = append(answers, a)
			continue
		}
		set.byName[ep.Name] = r
		if r.pod && len(r.ports) > 0 {
			npm.Update(r.id.ID, nil, r.ports)
		}
		a.Identity = uint32(r.id.ID)
		a.Labels = r.id.LabelArray.GetModel()
		answers = append(answers, a)
	}
	return set, answers, portsGetter{npm}
}

func resolve(ep Endpoint, s Settings, nss map[string]Namespace, prefixes []netip.Prefix, set *identitySet) (*resolved, error) {
	switch {
	case len(ep.Pod) > 0:
		var pod slim_corev1.Pod
		if err := json.Unmarshal(ep.Pod, &pod); err != nil {
			return nil, fmt.Errorf("pod: %w", err)
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		ns, ok := nss[pod.Namespace]
		if !ok {
			ns = Namespace{Name: pod.Namespace}
		}
		// The API server labels every Namespace with its name.
		nsLabels := map[string]string{"kubernetes.io/metadata.name": ns.Name}
		for k, v := range ns.Labels {
			nsLabels[k] = v
		}
		ns.Labels = nsLabels
		namedPorts, lbls := k8s.GetPodMetadata(logger, ns, &pod)
		idLabels, _ := labelsfilter.Filter(labels.Map2Labels(lbls, labels.LabelSourceK8s))
		// A new endpoint's identity also carries its named ports (endpoint/metadata).
		for _, l := range k8s.NamedPortsIdentityLabels(namedPorts) {
			idLabels[l.Key] = l
		}
		return &resolved{id: set.allocate(idLabels, identity.IdentityScopeGlobal), pod: true, ports: namedPorts}, nil
	case ep.CIDR != "":
		addr, err := netip.ParseAddr(ep.CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr: one address expected: %w", err)
		}
		return &resolved{id: cidrIdentity(addr, prefixes, set)}, nil
	case ep.Entity != "":
		id, err := entityIdentity(ep, s, set)
		if err != nil {
			return nil, err
		}
		return &resolved{id: id}, nil
	}
	return nil, errors.New("endpoint is neither pod, entity nor cidr")
}

// cidrIdentity: the ipcache holds an entry for every prefix the policies name (their CIDRs and
// excepts, with labels.GetCIDRLabels of the prefix); an address outside them all is world.
func cidrIdentity(addr netip.Addr, prefixes []netip.Prefix, set *identitySet) *identity.Identity {
	best := netip.Prefix{}
	found := false
	for _, p := range prefixes {
		if p.Contains(addr) && (!found || p.Bits() > best.Bits()) {
			best, found = p, true
		}
	}
	if !found {
		best = netip.PrefixFrom(addr, 0)
	}
	return set.allocate(labels.GetCIDRLabels(best), identity.IdentityScopeLocal)
}

func entityIdentity(ep Endpoint, s Settings, set *identitySet) (*identity.Identity, error) {
	node := func(base labels.Labels) labels.Labels {
		out := labels.NewFrom(base)
		if option.Config.PerNodeLabelsEnabled() {
			filtered, _ := labelsfilter.FilterNodeLabels(labels.Map2Labels(ep.NodeLabels, labels.LabelSourceNode))
			out.MergeLabels(filtered)
			out.MergeLabels(labels.Map2Labels(map[string]string{"io.cilium.k8s.policy.cluster": s.ClusterName}, labels.LabelSourceK8s))
		}
		return out
	}
	host := func() *identity.Identity {
		lbls := node(labels.LabelHost)
		if s.APIServer == "host" {
			lbls.MergeLabels(labels.LabelKubeAPIServer)
		}
		// The host's identity is fixed and its labels are those of every address it has.
		return identity.NewIdentity(identity.ReservedIdentityHost, lbls)
	}
	switch ep.Entity {
	case "host":
		return host(), nil
	case "remote-node":
		return set.allocate(node(labels.LabelRemoteNode), identity.IdentityScopeRemoteNode), nil
	case "kube-apiserver":
		switch s.APIServer {
		case "host":
			return host(), nil
		case "world":
			lbls := labels.NewFrom(labels.LabelKubeAPIServer)
			lbls.AddWorldLabel(netip.IPv4Unspecified())
			return set.allocate(lbls, identity.IdentityScopeLocal), nil
		default:
			lbls := node(labels.LabelRemoteNode)
			lbls.MergeLabels(labels.LabelKubeAPIServer)
			return set.allocate(lbls, identity.IdentityScopeRemoteNode), nil
		}
	}
	ni := identity.GetReservedID(ep.Entity)
	if ni == identity.IdentityUnknown {
		return nil, fmt.Errorf("entity %q has no reserved identity", ep.Entity)
	}
	id := identity.LookupReservedIdentity(ni)
	if id == nil {
		return nil, fmt.Errorf("entity %q has no reserved identity", ep.Entity)
	}
	return id, nil
}

// reservedIdentities: what the agent's selector cache starts with.
func reservedIdentities() map[identity.NumericIdentity]*identity.Identity {
	out := map[identity.NumericIdentity]*identity.Identity{}
	identity.IterateReservedIdentities(func(ni identity.NumericIdentity, id *identity.Identity) {
		out[ni] = id
	})
	return out
}

// owner is the endpoint a policy is distilled for (policy.PolicyOwner): its id and the named
// ports its containers declare (ingress named ports).
type owner struct {
	id    uint64
	ports ciliumtypes.NamedPortMap
}

func (o *owner) GetID() uint64 { return o.id }
func (o *owner) GetIngressNamedPort(name string, proto u8proto.U8proto) uint16 {
	p, err := o.ports.GetNamedPort(name, proto)
	if err != nil {
		return 0
	}
	return p
}
func (o *owner) PolicyDebug(string, ...any)                  {}
func (o *owner) IsHost() bool                                { return false }
func (o *owner) PreviousMapStateSizes() policy.MapStateSizes { return policy.MapStateSizes{} }
func (o *owner) RegenerateIfAlive(*regeneration.ExternalRegenerationMetadata) <-chan bool {
	ch := make(chan bool, 1)
	ch <- false
	return ch
}
