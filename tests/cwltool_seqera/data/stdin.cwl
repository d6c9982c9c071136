cwlVersion: v1.2
class: CommandLineTool
doc: Upper-case stdin into a captured stdout; also reports whether a parent variable leaked in.
requirements:
  EnvVarRequirement:
    envDef: {GREETING: hello}
baseCommand: [sh, -c, 'tr a-z A-Z; echo "$GREETING ${LEAK:-clean}"']
inputs:
  text: {type: File, streamable: true}
stdin: $(inputs.text.path)
stdout: upper.txt
outputs:
  upper: {type: stdout}
