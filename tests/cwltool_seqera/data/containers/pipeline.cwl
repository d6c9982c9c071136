cwlVersion: v1.2
class: Workflow
doc: Two containerised steps, the first scattered.
requirements:
  ScatterFeatureRequirement: {}
inputs:
  words: string[]
outputs:
  all: {type: File, outputSource: gather/all}
steps:
  shout:
    run: shout.cwl
    scatter: word
    in: {word: words}
    out: [out]
  gather:
    run: gather.cwl
    in: {parts: shout/out}
    out: [all]
