# Singularity/Apptainer cannot be installed here: its command line is checked against cwltool's own.
cwlVersion: v1.2
class: CommandLineTool
requirements:
  DockerRequirement: {dockerPull: localhost/seqera-cwl-test:1}
  EnvVarRequirement: {envDef: {GREETING: hello}}
inputs:
  word: {type: string, inputBinding: {position: 1}}
baseCommand: [echo]
outputs: []
