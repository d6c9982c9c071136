cwlVersion: v1.2
class: Workflow
doc: >
  A scatter of two-job chains: for every index, "first" (pausing for its own number of
  seconds) then "second" (after first's output), so second jobs go out while other
  chains' first jobs still run.
requirements:
  ScatterFeatureRequirement: {}
  SubworkflowFeatureRequirement: {}
inputs:
  runs: string
  indices: int[]
  pauses: int[]
steps:
  chain:
    scatter: [index, pause]
    scatterMethod: dotproduct
    in: {runs: runs, index: indices, pause: pauses}
    out: [first, second]
    run:
      class: Workflow
      inputs: {runs: string, index: int, pause: int}
      steps:
        faultcwl_first:
          run: append.cwl
          in: {runs: runs, index: index, pause: pause, step: {default: first}}
          out: [out]
        faultcwl_second:
          run: append.cwl
          in:
            runs: runs
            index: index
            pause: {default: 1}
            step: {default: second}
            after: faultcwl_first/out
          out: [out]
      outputs:
        first: {type: File, outputSource: faultcwl_first/out}
        second: {type: File, outputSource: faultcwl_second/out}
outputs:
  first: {type: 'File[]', outputSource: chain/first}
  second: {type: 'File[]', outputSource: chain/second}
