cwlVersion: v1.2
class: CommandLineTool
doc: >-
  Count a file's lines and list a directory into a file, copy stdin to a captured stdout,
  note on stderr.
requirements:
  DockerRequirement: {dockerPull: "debian:bookworm-slim"}
  ResourceRequirement: {coresMin: 1.5, ramMin: 300}
  InitialWorkDirRequirement:
    listing:
      - entryname: label.txt
        entry: "counted by $(inputs.label)"
baseCommand:
  - sh
  - -c
  - 'wc -l < "$0" > lines.txt; ls "$1" >> lines.txt; cat label.txt >> lines.txt; cat; echo done >&2'
arguments: [$(inputs.text.path), $(inputs.dir.path)]
inputs:
  text: File
  dir: Directory
  label: string
stdin: $(inputs.text.path)
stdout: copy.txt
outputs:
  lines: {type: File, outputBinding: {glob: lines.txt}}
  copy: {type: stdout}
