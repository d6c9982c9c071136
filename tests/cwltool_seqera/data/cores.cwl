cwlVersion: v1.2
class: CommandLineTool
doc: Ask for a fractional number of cores (2.5) and pause; the scheduler must record 3.
requirements:
  ResourceRequirement: {coresMin: 2.5, ramMin: 32}
baseCommand: [sleep, "6"]
inputs: []
outputs: []
