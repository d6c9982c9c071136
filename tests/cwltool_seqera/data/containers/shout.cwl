cwlVersion: v1.2
class: CommandLineTool
doc: |
  Runs in the test image: prints the word, the image's own marker file and the memory
  limit the container's cgroup enforces (v2, else v1).
requirements:
  DockerRequirement:
    dockerPull: localhost/seqera-cwl-test:1
  ResourceRequirement: {coresMin: 1, ramMin: 96}
  ToolTimeLimit: {timelimit: 300}
inputs:
  word: {type: string, inputBinding: {position: 1}}
baseCommand:
  - sh
  - -c
  - >-
    echo "$0 $(cat /etc/seqera-image)
    mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"
stdout: shout.txt
outputs:
  out: {type: stdout}
