cwlVersion: v1.2
class: CommandLineTool
doc: >
  Append its start time to a file of its own in RUNS (outside cwltool's staging, so a
  test can count how often each job ran), wait for the file GATE if one is named, pause,
  append its end time to another file, then write its output.
requirements:
  ResourceRequirement: {coresMin: 1, ramMin: 64}
  ToolTimeLimit: {timelimit: 300}
baseCommand:
  - sh
  - -c
  - >-
    date +%s.%N >> "$0/$1.$2";
    while [ -n "$4" ] && [ ! -e "$4" ]; do sleep 0.1; done;
    sleep "$3"; date +%s.%N >> "$0/end.$1.$2"; echo "$1 $2" > out.txt
inputs:
  runs: {type: string, inputBinding: {position: 1}}
  step: {type: string, inputBinding: {position: 2}}
  index: {type: int, inputBinding: {position: 3}}
  pause: {type: int, inputBinding: {position: 4}}
  gate: {type: string?, inputBinding: {position: 5}}
  after: {type: File?, doc: only orders this job after the one that wrote it}
outputs:
  out: {type: File, outputBinding: {glob: out.txt}}
