cwlVersion: v1.2
class: CommandLineTool
doc: Print the start and end time around a pause, to show which jobs overlapped.
requirements:
  ResourceRequirement: {coresMin: 1, ramMin: 64}
  ToolTimeLimit: {timelimit: 300}
baseCommand: [sh, -c, 'date +%s.%N; sleep "$0"; date +%s.%N']
inputs:
  pause: {type: int, inputBinding: {position: 1}}
stdout: stamps.txt
outputs:
  stamps: {type: stdout}
