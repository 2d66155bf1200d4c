package lib.placement

# Placement helpers shared by every ConstraintTemplate under policy/gatekeeper: each template carries this
# file verbatim as its one `libs` entry (code[].source.libs; "Modules can be imported from data.libs",
# open-policy-agent/frameworks constraint/pkg/client/drivers/rego/schema/schema.go) and imports it as
# data.lib.placement, as gatekeeper-library's templates import lib.exclude_update. Edit it here, then run
# `python -m tools.rego_libs` to copy it into the templates; tests/test_gatekeeper.py fails on a stale copy.

os_label := "kubernetes.io/os"

build_label := "node.kubernetes.io/windows-build"

# The kubernetes.io/os values nodes report (the kubelet's GOOS) in a cluster of Linux and Windows nodes.
known_oses := {"linux", "windows"}

# Workload kinds whose pod template sits at spec.template; CronJob nests one level deeper. Matching the
# workloads themselves rejects a bad Deployment at apply time instead of leaving its ReplicaSet failing to
# create pods.
template_kinds := {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job"}

pod_spec := input.review.object.spec if input.review.kind.kind == "Pod"

pod_spec := input.review.object.spec.template.spec if input.review.kind.kind in template_kinds

pod_spec := input.review.object.spec.jobTemplate.spec.template.spec if input.review.kind.kind == "CronJob"

# The request namespace; an object applied with `-n` may not carry metadata.namespace.
namespace := ns if {
	ns := object.get(input.review, "namespace", "")
	ns != ""
} else := object.get(input.review.object.metadata, "namespace", "")

object_name := input.review.object.metadata.name if {
	input.review.object.metadata.name != ""
} else := concat("", [object.get(input.review.object.metadata, "generateName", ""), "*"])

# Messages are assembled with concat: it means the same in OPA, and rego-cpp (the engine the tests and the
# policy pack run) mis-renders computed strings passed through sprintf's %v.
subject := concat(" ", [input.review.kind.kind, object_name])

runtime_class_name := pod_spec.runtimeClassName

# Synced cluster-scoped objects live at data.inventory.cluster[<groupVersion>][<kind>][<name>].
runtime_class := data.inventory.cluster["node.k8s.io/v1"].RuntimeClass[runtime_class_name]

runtime_class_hint := concat("", ["; RuntimeClass \"", runtime_class_name, "\" is not in Gatekeeper's inventory (it does not exist, or RuntimeClasses are not synced)"]) if {
	runtime_class_name
	not runtime_class
} else := ""

# --- which values of a node label a pod can land on ------------------------------------------------------
#
# Each way of choosing nodes (nodeSelector, the RuntimeClass's scheduling.nodeSelector that RuntimeClass
# admission merges in, required node affinity) allows some values of a label; the scheduler requires all of
# them at once, so the pod can land on the values every choice allows. A label's universe is every value
# nodes carry, against which NotIn and Exists are read: the two operating systems, and for the Windows build
# label the builds the constraint lists (input.parameters.builds). A choice is a sorted array: rego-cpp,
# the engine the tests and the policy pack run, mishandles sets of sets.

universe(label) := known_oses if label == os_label

universe(label) := {b.build | some b in input.parameters.builds} if label == build_label

affinity_terms := pod_spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms

label_expressions(term, label) := [e | some e in object.get(term, "matchExpressions", []); e.key == label]

# Values the pod names for the label, which may lie outside the universe (a typo, another OS).
# Looked up outside any comprehension: rego-cpp reads obj[label] inside one as every value of obj.
selector_values(selector, label) := {value} if {
	value := selector[label]
} else := set()

named_values(label) := ((selector_values(object.get(pod_spec, "nodeSelector", {}), label) | runtime_class_values(label)) | {v |
	some term in affinity_terms
	some e in label_expressions(term, label)
	some v in object.get(e, "values", [])
})

runtime_class_values(label) := selector_values(object.get(object.get(runtime_class, "scheduling", {}), "nodeSelector", {}), label) if {
	runtime_class
} else := set()

candidates(label) := universe(label) | named_values(label)

# A node selector requirement, as core/v1 NodeSelectorRequirement defines its operators: In and NotIn
# compare the values, Exists and DoesNotExist only test for the label (every node carries both labels
# here), Gt and Lt compare integers, which neither label's values are, so they never narrow.
expression_allows(e, value) if {
	e.operator == "In"
	value in e.values
}

expression_allows(e, value) if {
	e.operator == "NotIn"
	not value in object.get(e, "values", [])
}

expression_allows(e, _) if e.operator in {"Exists", "Gt", "Lt"}

# Expressions in one term are ANDed: a term allows a value when each of its expressions on the label does
# (every value, when it has none).
term_allows(term, label, value) if {
	every e in label_expressions(term, label) {
		expression_allows(e, value)
	}
}

# Terms are ORed.
affinity_allowed(label) := sort({v |
	some v in candidates(label)
	some term in affinity_terms
	term_allows(term, label, v)
})

# The pod's choices for the label, one sorted array each; the affinity counts only when it narrows.
choices(label) := array.concat(
	array.concat(
		[[v] | some v in selector_values(object.get(pod_spec, "nodeSelector", {}), label)],
		[[v] | some v in runtime_class_values(label)],
	),
	[a | count(affinity_terms) > 0; a := affinity_allowed(label); a != sort(candidates(label))],
)

# The values every choice allows (every candidate, when the pod makes no choice).
allowed_values(label) := {v |
	some v in candidates(label)
	every c in choices(label) {
		v in c
	}
}

choices_text(label) := concat(" vs ", sort([concat("|", c) | some c in choices(label)]))

os_choices := choices(os_label)

selected_oses := allowed_values(os_label)

# The pod lands only on nodes of this OS (it chose, and chose exactly one).
selects_only(os) if {
	count(os_choices) > 0
	selected_oses == {os}
}

selection_text := concat(", ", sort(selected_oses)) if {
	count(os_choices) > 0
	count(selected_oses) > 0
} else := "no single operating system"
