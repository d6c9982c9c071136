cwlVersion: v1.2
class: CommandLineTool
doc: Hands its memory allocation to the tool, as -Xmx$(runtime.ram)m would.
requirements:
  ResourceRequirement: {ramMin: 2000, coresMin: 1}
inputs:
  python: string
arguments:
  - $(inputs.python)
  - -c
  - "import sys; print(sys.argv[1])"
  - $(runtime.ram)
outputs: {}
