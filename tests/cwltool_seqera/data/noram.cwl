cwlVersion: v1.2
class: CommandLineTool
doc: The same command without the allocation in it, free to be sized down.
requirements:
  ResourceRequirement: {ramMin: 2000, coresMin: 1}
inputs:
  python: string
arguments:
  - $(inputs.python)
  - -c
  - "import sys; print(sys.argv[1])"
  - "2000"
outputs: {}
