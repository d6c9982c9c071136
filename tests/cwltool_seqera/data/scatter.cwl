cwlVersion: v1.2
class: Workflow
doc: Three pauses side by side (a scatter).
requirements:
  ScatterFeatureRequirement: {}
inputs:
  pauses: int[]
steps:
  stamp:
    run: stamp.cwl
    scatter: pause
    in: {pause: pauses}
    out: [stamps]
outputs:
  stamps: {type: 'File[]', outputSource: stamp/stamps}
