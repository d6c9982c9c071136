cwlVersion: v1.2
class: CommandLineTool
doc: Sleep past its two-second time limit.
requirements:
  ToolTimeLimit: {timelimit: 2}
baseCommand: [sleep, "30"]
inputs: []
outputs: []
