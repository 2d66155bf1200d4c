"""The plan: the stack's validated configuration (config.model.StackSpec) turned into the renderers' typed
inputs. Pure: no Pulumi, no side effects. config -> plan -> render; the components wire what the plan
and the renderers produce into resources (components/), each taking the slice it needs."""
