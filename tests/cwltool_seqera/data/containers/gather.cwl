cwlVersion: v1.2
class: CommandLineTool
doc: Concatenates its inputs inside the test image, then adds the image's marker.
requirements:
  DockerRequirement:
    dockerPull: localhost/seqera-cwl-test:1
  ToolTimeLimit: {timelimit: 300}
inputs:
  parts: {type: 'File[]', inputBinding: {position: 1}}
baseCommand: [sh, -c, 'cat "$@"; echo "gathered in $(cat /etc/seqera-image)"', gather]
stdout: all.txt
outputs:
  all: {type: stdout}
