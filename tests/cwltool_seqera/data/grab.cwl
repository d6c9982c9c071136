cwlVersion: v1.2
class: CommandLineTool
doc: Holds 100 MB of memory for a moment, far less than the 4000 MiB it declares.
requirements:
  ResourceRequirement: {ramMin: 4000, coresMin: 1}
inputs:
  python: string
  data: File
arguments:
  - $(inputs.python)
  - -c
  - "import time; b = bytearray(100_000_000); time.sleep(0.3)"
outputs: {}
