cwlVersion: v1.2
class: Workflow
doc: Count words in every file in parallel (a scatter), then add the counts up.
requirements:
  ScatterFeatureRequirement: {}
inputs:
  texts: File[]
  pause: {type: int, default: 0}
steps:
  count:
    run: words.cwl
    scatter: text
    in: {text: texts, pause: pause}
    out: [words]
  add:
    run: total.cwl
    in: {counts: count/words}
    out: [total]
outputs:
  total: {type: File, outputSource: add/total}
  counts: {type: 'File[]', outputSource: count/words}
