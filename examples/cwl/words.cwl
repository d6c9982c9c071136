cwlVersion: v1.2
class: CommandLineTool
doc: Count the words of one file after an optional pause, with declared cores, memory and a time limit.
baseCommand: [sh, -c, 'sleep "$0" && wc -w < "$1"']
requirements:
  ResourceRequirement: {coresMin: 1, ramMin: 200}
  ToolTimeLimit: {timelimit: 120}
inputs:
  pause: {type: int, default: 0, inputBinding: {position: 1}}
  text: {type: File, inputBinding: {position: 2}}
stdout: words.txt
outputs:
  words: {type: stdout}
