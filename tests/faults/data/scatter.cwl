cwlVersion: v1.2
class: Workflow
doc: One scattered step; each job appends to its own file in RUNS, waits for GATE, pauses.
requirements:
  ScatterFeatureRequirement: {}
inputs:
  runs: string
  indices: int[]
  pause: int
  gate: string
steps:
  faultlock:
    run: append.cwl
    scatter: index
    in: {runs: runs, index: indices, pause: pause, gate: gate, step: {default: job}}
    out: [out]
outputs:
  out: {type: 'File[]', outputSource: faultlock/out}
