// Evaluates seqera-sidecar config --per-task files as Nextflow would, in one JVM.
// argv[0]: a JSON file {"configs": [{"path": ..., "cases": [{process, attempt, exitStatus,
// executor, resourceLabels, inputs: [paths], workflow: {...}}]}]}; prints one JSON list.
// Parsing: Groovy's ConfigSlurper with the label rewrite Nextflow's classic parser adds
// (ConfigTransformImpl: `withName: 'X' {}` becomes the block `withName:X`). Evaluation:
// as TaskConfig/LazyMap do, each closure cloned with the task context as its delegate.
import groovy.json.JsonOutput
import groovy.json.JsonSlurper
import java.nio.file.Paths
import org.codehaus.groovy.ast.ClassCodeVisitorSupport
import org.codehaus.groovy.ast.ClassNode
import org.codehaus.groovy.ast.expr.ConstantExpression
import org.codehaus.groovy.ast.expr.MethodCallExpression
import org.codehaus.groovy.ast.stmt.ExpressionStatement
import org.codehaus.groovy.classgen.GeneratorContext
import org.codehaus.groovy.control.CompilePhase
import org.codehaus.groovy.control.CompilerConfiguration
import org.codehaus.groovy.control.SourceUnit
import org.codehaus.groovy.control.customizers.CompilationCustomizer

class Selectors extends CompilationCustomizer {
    Selectors() { super(CompilePhase.CONVERSION) }
    void call(SourceUnit unit, GeneratorContext context, ClassNode node) {
        new ClassCodeVisitorSupport() {
            SourceUnit getSourceUnit() { unit }
            void visitExpressionStatement(ExpressionStatement stm) {
                def label = stm.getStatementLabel()
                if (stm.expression instanceof MethodCallExpression && label in ['withName', 'withLabel']) {
                    def call = stm.expression as MethodCallExpression
                    call.setMethod(new ConstantExpression(label + ':' + call.method.text))
                }
                super.visitExpressionStatement(stm)
            }
        }.visitClass(node)
    }
}

// TaskConfig's ext: a LazyMap, whose closures are called with the task context
class Ext extends LinkedHashMap {
    Object context
    Object get(Object key) {
        def value = super.get(key)
        if (value instanceof Closure) {
            def copy = value.clone()
            copy.delegate = context
            copy.resolveStrategy = Closure.DELEGATE_FIRST
            return copy.call()
        }
        return value
    }
}

// TaskConfig's fields a config closure may read; its own resources would recurse in
// Nextflow (TaskConfig.get evaluates the same closure), so reading them is an error here.
class Task {
    String process; Integer attempt; Integer exitStatus; String executor; String hash
    Map resourceLabels; Ext ext
    Object getCpus() { throw new IllegalStateException('task.cpus read inside a resource closure') }
    Object getMemory() { throw new IllegalStateException('task.memory read inside a resource closure') }
    Object getTime() { throw new IllegalStateException('task.time read inside a resource closure') }
}

// TaskContext: the task's variables (its inputs and `task`), with getHolder()
class Context extends LinkedHashMap {
    Map getHolder() { this }
}

def evaluate(Closure closure, Object context) {
    def copy = closure.clone()
    copy.delegate = context
    copy.resolveStrategy = Closure.DELEGATE_FIRST
    return copy.call()
}

def spec = new JsonSlurper().parse(new File(args[0]))
def results = []
spec.configs.each { entry ->
    System.getProperties().remove('seqera.sidecar.answers')
    def configuration = new CompilerConfiguration()
    configuration.addCompilationCustomizers(new Selectors())
    def script = new GroovyShell(configuration).parse(new File(entry.path))
    def config = new ConfigSlurper().parse(script)
    def scope = config.process
    entry.cases.each { c ->
        // every matching selector in order, as ProcessConfigBuilder.applyConfig: directives
        // replaced, ext entries merged key by key
        def keys = scope.keySet().findAll { k -> k.startsWith('withName:') && c.process ==~ k.substring(9) }
        def block = [:]
        def context = new Context()
        def ext = new Ext(context: context)
        keys.each { k ->
            scope.get(k).each { name, value ->
                if (name == 'ext') { value.each { e, v -> ext.put(e, v) } } else { block.put(name, value) }
            }
        }
        def key = keys.find { k -> k != 'withName:.*' }
        def result = [process: c.process, selector: key]
        if (key != null) {
            def task = new Task(process: c.process, attempt: c.attempt, exitStatus: c.exitStatus,
                                executor: c.executor, resourceLabels: c.resourceLabels, ext: ext,
                                hash: c.hash)
            context.put('task', task)
            (c.inputs ?: []).eachWithIndex { path, i -> context.put('input' + i, Paths.get(path)) }
            if (c.workflow) { context.put('workflow', c.workflow) }
            def started = System.nanoTime()
            ['cpus', 'memory', 'time', 'clusterOptions'].each { name ->
                def value = evaluate(block.get(name), context)
                result[name] = value
            }
            result.millis = (System.nanoTime() - started) / 1e6
            result.source = ext.get('seqeraSidecar').source
        }
        results << result
    }
}
println JsonOutput.toJson(results)
