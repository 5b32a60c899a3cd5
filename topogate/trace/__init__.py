"""``topogate trace``: may SRC reach DST, and which policy line decides it?

An offline stand-in for the removed ``cilium policy trace``, answered from the repo before
anything is deployed.  This module only turns the user's words into the evaluator's terms and
back: it parses SRC/DST specs, resolves them against the manifests among PATHs into a
``PodClass`` (or an ``External``), and asks ``topogate.analysis.netpolicy`` -- the one
implementation of the policy semantics, shared with ``check`` -- for the verdict.  Nothing here
decides whether a flow is allowed.

Specs (``--from``/``--to``):
- ``ns/Kind/name[/group]``: the pods of a workload.  Training kinds (``kinds.KINDS``: PyTorchJob, TFJob, MPIJob, JobSet,
  TrainJob) have replica groups; a job with more than one needs the group (case-insensitive).
  Plain kinds: Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, Pod.  The pods'
  labels are the template's plus what the controller stamps (``kinds.controller_labels``; Job
  pods also get ``job-name`` and ``batch.kubernetes.io/job-name``); labels whose value differs per
  pod (pod-template-hash, replica index, controller uid) are left out, since a label class cannot
  hold them.  Named container ports come from the template, the service account from
  ``serviceAccountName`` (``default`` when unset, as the API server defaults it).  An object
  without ``metadata.namespace`` lives in ``default``, unless ``--inventory`` names it as a
  workload, whose namespace then applies (inventory bases carry no namespace).
- ``ns:key=value,key=value``: a pod with exactly these labels in namespace ``ns`` (``ns:`` is an
  unlabelled pod).
- an entity: ``world``, ``host``, ``kube-apiserver``, ``cluster``, ``remote-node`` (and the other
  Cilium entities ``world-ipv4``, ``world-ipv6``, ``health``, ``init``, ``ingress``, ``unmanaged``).
- a CIDR or an IP (``10.0.0.0/8``, ``192.0.2.7``, ``2001:db8::/32``), or ``fqdn:NAME`` for
  ``toFQDNs`` rules.  At least one side must be pods: between two externals no policy applies.

Namespace labels come from Namespace objects among PATHs (the evaluator learns them) plus the
automatic ``kubernetes.io/metadata.name``.

Ports: ``--port 8080``, ``8080/UDP`` (default TCP; TCP, UDP, SCTP), or a container-port name
of the destination (``--port metrics``).  Without ``--port`` the answer is given per port class:
the maximal TCP and UDP port ranges over which the verdict does not change
(``PolicySet.port_classes``).

Verdict and exit code: ``allowed`` (exit 0) when every traced port class is allowed, ``denied``
(exit 1) when none is, ``partial`` (exit 1) when some are: a trace without ``--port`` passes
only when nothing the policies distinguish is dropped, so a script can use it as a gate and
read the classes to see which ports are open.  Bad input (unknown workload, bad spec, unreadable
file) raises ``TraceError`` (exit 2, one line, with file:line:column where there is one).
"""

# The implementation is split by stage; callers import from here.
#   spec.py      --from/--to/--port parsing
#   resolve.py   specs -> pods, via the manifests and --inventory; cluster scoping
#   evaluate.py  trace() and run_trace(): the policy verdict
#   model.py     TraceError and the result dataclasses
#   jsonout.py   as_json()
from topogate.trace.evaluate import run_trace, trace
from topogate.trace.jsonout import as_json as as_json  # for the CLI; not in __all__, as before the split
from topogate.trace.model import Endpoint, PortQuery, SideSummary, TraceError, TraceResult
from topogate.trace.spec import ENTITIES, parse_port

__all__ = ["ENTITIES", "Endpoint", "PortQuery", "SideSummary", "TraceError", "TraceResult",
           "as_json", "parse_port", "run_trace", "trace"]
