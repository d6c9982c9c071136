cwlVersion: v1.2
class: CommandLineTool
doc: Exit with the given code; 3 is a temporary failure, 4 a permanent one, 5 a success.
baseCommand: [sh, -c, 'exit "$0"']
successCodes: [5]
temporaryFailCodes: [3]
permanentFailCodes: [4]
inputs:
  code: {type: int, inputBinding: {position: 1}}
outputs: []
