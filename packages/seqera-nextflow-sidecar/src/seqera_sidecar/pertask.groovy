// The shared closure of seqera-sidecar config --per-task (see _pertask_groovy.py).
// Placeholders: @URL@, @TIMEOUT@, @TTL@, @BACKOFF@, @AUTO@, @LABELS@, @COMMENT_MAX@.
    withName: '.*' {
        ext.seqeraSidecar = {
            def declared = task.ext.seqeraDeclared ?: [:]
            def url = System.getenv('SEQERA_SIDECAR_URL') ?: @URL@
            def timeout = (System.getenv('SEQERA_SIDECAR_TIMEOUT_MS') ?: '@TIMEOUT@') as Integer
            def ttl = (System.getenv('SEQERA_SIDECAR_CACHE_MS') ?: '@TTL@') as Long
            def backoff = (System.getenv('SEQERA_SIDECAR_BACKOFF_MS') ?: '@BACKOFF@') as Long
            def attempt = (task.attempt ?: 1) as Integer
            // Input bytes: the task's staged local files, where its context holds them
            // (a file input's variable); remote paths are not stat-ed (a request per file).
            def files = []
            def holder = delegate instanceof Map ? delegate : [:]
            holder.each { name, value ->
                def items = value instanceof Collection ? value : [value]
                items.each { item ->
                    if (item instanceof java.nio.file.Path && item.getFileSystem().provider().getScheme() == 'file') {
                        files.add(item)
                    }
                }
            }
            def inputBytes = files ? files.inject(0L) { total, path -> total + (path.toFile().length()) } : null
            def request = [process: task.process, attempt: attempt]
            if (declared.cpus) { request.cpus = declared.cpus }
            if (declared.memory) { request.memory_bytes = declared.memory }
            if (declared.time) { request.time_seconds = declared.time }
            if (inputBytes != null) { request.input_bytes = inputBytes }
            def store = System.getProperties().computeIfAbsent('seqera.sidecar.answers', { name -> new java.util.concurrent.ConcurrentHashMap() })
            def question = new groovy.json.JsonBuilder(request).toString()
            // A retry says how the attempt before ended and what it was given: Nextflow submits
            // it before the weblog reports that attempt (see seqera_sidecar.retries).
            if (attempt > 1 && task.exitStatus != null) {
                def gave = store.get('given|' + new groovy.json.JsonBuilder(request + [attempt: attempt - 1]).toString())
                def trace = null
                try { trace = task.previousTrace } catch (Exception none) { trace = null }
                def memoryBefore = trace != null ? trace.get('memory') : gave?.memory
                def millisBefore = trace != null ? trace.get('time') : gave?.time
                def extra = ['nextflow.exit_status': task.exitStatus.toString()]
                if (memoryBefore != null) { extra.put('nextflow.previous_memory_bytes', memoryBefore.toString()) }
                if (millisBefore != null) { extra.put('nextflow.previous_time_seconds', ((millisBefore as Long).intdiv(1000L)).toString()) }
                request.extra = extra
            }
            def body = new groovy.json.JsonBuilder(request).toString()
            def key = body + '|' + task.exitStatus
            // With an input size the weblog should record the task with it, not rchar: the
            // task's hash as its trace writes it ('ab/cdef12') names it (seqera_sidecar.ledger).
            def hash = task.hash == null ? '' : task.hash.toString()
            def sent = inputBytes != null && hash.length() >= 8 ? new groovy.json.JsonBuilder(request + [labels: ['nextflow/task-hash': hash.substring(0, 2) + '/' + hash.substring(2, 8)]]).toString() : body
            def now = System.currentTimeMillis()
            def kept = store.get(key)
            def answer = kept != null && kept.until > now ? kept.answer : null
            def down = store.get('down')
            if (answer == null) {
                answer = [cpus: declared.cpus, memory: declared.memory, time: declared.time == null ? null : declared.time * 1000L, source: 'declared']
                if (down == null || down.until <= now) {
                    try {
                        def connection = new URI(url + '/v1/resources/resolve').toURL().openConnection()
                        connection.setConnectTimeout(timeout)
                        connection.setReadTimeout(timeout)
                        connection.setRequestMethod('POST')
                        connection.setDoOutput(true)
                        connection.setRequestProperty('Content-Type', 'application/json')
                        def token = System.getenv('SEQERA_SIDECAR_TOKEN')
                        if (token) { connection.setRequestProperty('Authorization', 'Bearer ' + token) }
                        connection.getOutputStream().withCloseable { out -> out.write(sent.getBytes('UTF-8')) }
                        def status = connection.getResponseCode()
                        if (status == 200) {
                            def got = new groovy.json.JsonSlurper().parseText(connection.getInputStream().getText('UTF-8'))
                            answer = [cpus: got.cpus, memory: got.memory_bytes, time: got.time_seconds * 1000L, source: 'sidecar']
                        }
                        else if (status == 204) {
                            answer.source = 'sidecar'
                        }
                        else {
                            throw new IOException('HTTP ' + status + ' from ' + url)
                        }
                    }
                    catch (Exception failure) {
                        store.put('down', [until: now + backoff])
                        System.err.println('seqera-sidecar: ' + task.process + ': declared resources used (' + failure + ')')
                    }
                }
                store.put(key, [answer: answer, until: now + (answer.source == 'sidecar' ? ttl : 0L)])
            }
            store.put('given|' + question, answer)
            // Labels for grid executors, per task and never cached: the run's baseline, then
            // the task's own resourceLabels on top, encoded as seqera_core.labels.encode_labels
            // does (k=v;k=v, sorted, every character outside A-Za-z0-9_.:/@+~- as %XX of UTF-8).
            def labels = [:]
            def wf = null
            try { wf = workflow } catch (Exception missing) { wf = null }
            def meta = wf == null ? [:] : ['run-name': wf.runName, 'run-id': wf.sessionId, 'project': wf.projectName, 'user': wf.userName, 'resume': wf.resume]
            labels.put('nextflow/engine', 'nextflow')
            meta.each { name, value -> if (value != null) { labels.put('nextflow/' + name, value instanceof Boolean ? (value ? 'true' : 'false') : value.toString()) } }
            labels = labels.findAll { name, value -> @AUTO@.contains(name.substring(9)) }
            labels.putAll(@LABELS@)
            (task.resourceLabels ?: [:]).each { name, value -> labels.put(name.toString(), value == null ? '' : value.toString()) }
            def encode = { text -> URLEncoder.encode(text, 'UTF-8').replace('+', '%20').replace('*', '%2A').replace('%3A', ':').replace('%2F', '/').replace('%40', '@').replace('%2B', '+').replace('%7E', '~') }
            def pairs = labels.keySet().sort().collect { name -> encode.call(name) + '=' + encode.call(labels.get(name)) }
            def executor = (task.executor ?: '').toString()
            def mine = ''
            if (pairs && executor == 'slurm') {
                // slurmctld refuses a comment over 1024 bytes: whole pairs are left out, never half
                def fits = pairs.inject([]) { list, pair -> (list + [pair]).join(';').length() <= @COMMENT_MAX@ ? list + [pair] : list }
                mine = fits ? '--comment=' + fits.join(';') : ''
            }
            else if (pairs && executor == 'pbspro') {
                mine = '-v SEQERA_LABELS=' + pairs.join(';')
            }
            else if (pairs && executor == 'sge') {
                mine = '-ac SEQERA_LABELS=' + pairs.join(';')
            }
            else if (pairs && executor == 'lsf') {
                mine = '-Jd SEQERA_LABELS=' + pairs.join(';')
            }
            def theirs = declared.clusterOptions
            def options = theirs instanceof Collection ? theirs.collect { item -> item.toString() } : (theirs ? [theirs.toString()] : [])
            if (mine) { options.add(mine) }
            return answer + [clusterOptions: options ? options.join(' ') : null]
        }
    }
