cwlVersion: v1.2
class: CommandLineTool
doc: Add up the counts, one number per file.
baseCommand: [awk, '{ s += $1 } END { print s }']
inputs:
  counts: {type: 'File[]', inputBinding: {position: 1}}
stdout: total.txt
outputs:
  total: {type: stdout}
