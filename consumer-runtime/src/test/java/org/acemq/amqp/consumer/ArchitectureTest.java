package org.acemq.amqp.consumer;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.impl.ClientMessageSupport;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime's shape, checked on its compiled classes and its sources: no dependency cycle between its classes, all
 * that goes below protonj2's client API in one package, and a public surface that hides the internals and protonj2.
 */
class ArchitectureTest {


    private static final String ROOT_PACKAGE = "org.acemq.amqp.consumer";
    private static final String INTERNAL_PACKAGE = ROOT_PACKAGE + ".internal";
    private static final String PROTONJ2_PACKAGE = "org.apache.qpid.protonj2";
    private static final String ENGINE_PACKAGE = INTERNAL_PACKAGE + ".engine";

    /**
     * protonj2 below its client API: the client's implementation, the engine, the codec, the buffer implementations
     * and the transport performatives. The client API ({@code client}, {@code client.exceptions}), the message types
     * ({@code types}, {@code types.messaging}) and the buffer interface ({@code buffer}) are what the rest of the
     * runtime may use.
     */
    private static final String[] BELOW_THE_CLIENT_API = {
        PROTONJ2_PACKAGE + ".client.impl..", PROTONJ2_PACKAGE + ".client.transport..",
        PROTONJ2_PACKAGE + ".client.util..", PROTONJ2_PACKAGE + ".client.futures..",
        PROTONJ2_PACKAGE + ".engine..", PROTONJ2_PACKAGE + ".codec..", PROTONJ2_PACKAGE + ".buffer.impl..",
        PROTONJ2_PACKAGE + ".buffer.netty..", PROTONJ2_PACKAGE + ".types.transport..",
        PROTONJ2_PACKAGE + ".logging..",
    };

    /** Calls on {@code java.lang.Class} that look a class or its members up by name (reflection without an import). */
    private static final DescribedPredicate<JavaMethodCall> REFLECTIVE_LOOKUP = DescribedPredicate.describe(
            "a reflective lookup on java.lang.Class (forName, getDeclared*, getMethod(s), getField(s), "
                    + "getConstructor(s))",
            call -> call.getTargetOwner().isEquivalentTo(Class.class) && call.getName().matches(
                    "forName|getDeclared\\w*|getMethods?|getFields?|getConstructors?"));

    /**
     * Only {@code internal.engine} reaches below protonj2's client API or uses reflection (which is how it reaches
     * protonj2's non-public parts); everything else goes through its {@code ProtonInternals}.
     */
    static final ArchRule ONLY_THE_ENGINE_PACKAGE_GOES_BELOW_THE_CLIENT_API = noClasses()
            .that().resideOutsideOfPackage(ENGINE_PACKAGE + "..")
            .should().dependOnClassesThat().resideInAnyPackage(BELOW_THE_CLIENT_API)
            .orShould().dependOnClassesThat().resideInAnyPackage("java.lang.reflect..", "java.lang.invoke..")
            .orShould().callMethodWhere(REFLECTIVE_LOOKUP)
            .because("reading internal.engine is then reading everything an upgrade of protonj2 can break");

    private static Path module;
    private static JavaClasses classes;

    @BeforeAll
    static void importTheRuntimeClasses() {
        module = ProjectFiles.root().resolve("consumer-runtime");
        Path compiled = module.resolve("target/classes");
        assertThat(compiled.resolve(ROOT_PACKAGE.replace('.', '/')))
                .as("the compiled runtime classes (run the test through Maven, which compiles them first)")
                .isDirectory();
        classes = new ClassFileImporter().importPath(compiled);
    }

    /**
     * One slice per top-level class (a nested or anonymous class belongs to the class it is declared in): a cycle
     * between slices is two classes that each need the other, directly or through others. The message first lists the
     * groups of classes caught in cycles, then ArchUnit's report of each cycle with the dependencies behind each step.
     */
    @Test
    void noDependencyCycleBetweenTheRuntimeClasses() {
        ClassGraph graph = new ClassGraph();
        for (JavaClass c : classes) {
            String from = TopLevelClasses.nameOf(c);
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String to = TopLevelClasses.nameOf(d.getTargetClass());
                if (from != null && to != null) {
                    graph.add(from, to, d.getDescription());
                }
            }
        }
        List<List<String>> cycles = graph.cycles();
        EvaluationResult result = slices().assignedFrom(new TopLevelClasses())
                .should().beFreeOfCycles()
                .because("each runtime class can then be read, tested and changed knowing only the classes it uses")
                .evaluate(classes);
        if (!cycles.isEmpty() || result.hasViolation()) {
            throw new AssertionError("Dependency cycles between the runtime's classes (compiled code):"
                    + graph.describe(cycles) + "\n\nEach cycle:\n" + result.getFailureReport());
        }
    }

    /**
     * The same rule on the sources, which also see a constant one class reads from another (javac copies its value,
     * so the compiled class does not name the class it came from).
     */
    @Test
    void noClassNamesAnotherThatNamesItBackInTheSources() throws IOException {
        ClassGraph graph = SourceReferences.scan(module.resolve("src/main/java"), ROOT_PACKAGE);
        List<List<String>> cycles = graph.cycles();
        assertThat(cycles).as("Dependency cycles between the runtime's classes (sources, comments left out):%s",
                graph.describe(cycles)).isEmpty();
    }

    /** The source scan itself: what it counts as a reference and what it leaves out. */
    @Test
    void theSourceScanSeesCodeNotCommentsOrLiterals() {
        String code = SourceReferences.codeOnly("""
                /** {@link Intake} */ class A { // Subscriber
                    String s = "Completions \\" // x"; char c = '"'; String t = \"""
                        Holds
                        \"""; Keys k; }
                """);
        assertThat(code).contains("class A {", "Keys k;", "char c = '';")
                .doesNotContain("Intake", "Subscriber", "Completions", "Holds", "// x");
    }

    /**
     * The source scan on a small tree: a constant read from another class is a reference (javac leaves no trace of
     * it), a Javadoc link and another package's class of the same simple name are not.
     */
    @Test
    void theSourceScanFindsACycleThroughAConstant(@TempDir Path sources) throws IOException {
        Path pkg = Files.createDirectories(sources.resolve("x/y/z"));
        Files.createDirectories(pkg.resolve("sub"));
        Files.writeString(pkg.resolve("Names.java"), """
                package x.y.z;
                /** Read by {@link Reader}. */
                final class Names { static final String NAME = "n" + Reader.SUFFIX; }
                """);
        Files.writeString(pkg.resolve("Reader.java"), """
                package x.y.z;
                final class Reader { static final String SUFFIX = "s"; String n = Names.NAME; }
                """);
        Files.writeString(pkg.resolve("Alone.java"), """
                package x.y.z;
                import x.y.z.sub.Helper;
                /** Not {@link Names}. */
                final class Alone { org.example.Reader r; Helper h; }
                """);
        Files.writeString(pkg.resolve("sub/Helper.java"), """
                package x.y.z.sub;
                public final class Helper { }
                """);
        ClassGraph graph = SourceReferences.scan(sources, "x.y.z");
        assertThat(graph.cycles()).containsExactly(List.of("Names", "Reader"));
        assertThat(graph.describe(graph.cycles())).contains("Names -> Reader: names Reader")
                .contains("Reader -> Names: names Names").doesNotContain("Alone");
        graph.add("sub.Helper", "Alone", "test");
        assertThat(graph.cycles()).as("Alone imports sub.Helper").hasSize(2);
    }

    @Test
    void onlyTheEnginePackageReachesBelowProtonj2sClientApiOrUsesReflection() {
        EvaluationResult result = ONLY_THE_ENGINE_PACKAGE_GOES_BELOW_THE_CLIENT_API.evaluate(classes);
        assertThat(result.hasViolation()).as("%s", result.getFailureReport()).isFalse();
        // the exemption is used: the engine package does reach below the client API, by reflection too
        assertThat(classes.stream().filter(c -> c.getPackageName().equals(ENGINE_PACKAGE))
                .flatMap(c -> c.getDirectDependenciesFromSelf().stream())
                .map(d -> d.getTargetClass().getPackageName()).distinct())
                .contains(PROTONJ2_PACKAGE + ".engine", PROTONJ2_PACKAGE + ".client.impl", "java.lang.invoke");
    }

    /** The rule itself, on classes of this test's package that do what only the engine package may. */
    @Test
    void theEngineRuleCatchesProtonj2ImplementationTypesAndReflectionOutsideTheEnginePackage() {
        JavaClasses outside = new ClassFileImporter().importClasses(UsesClientImpl.class, UsesTheEngine.class,
                PrivateLookup.class, LookupByName.class, UsesTheClientApiOnly.class);
        EvaluationResult result = ONLY_THE_ENGINE_PACKAGE_GOES_BELOW_THE_CLIENT_API.evaluate(outside);
        String report = result.getFailureReport().toString();
        assertThat(report).contains(UsesClientImpl.class.getName(), UsesTheEngine.class.getName(),
                PrivateLookup.class.getName(), LookupByName.class.getName())
                .doesNotContain(UsesTheClientApiOnly.class.getName());
    }

    /** Fixture: decodes with protonj2's client implementation. */
    static final class UsesClientImpl {
        Object decode(ProtonBuffer encoded) throws Exception {
            return ClientMessageSupport.decodeMessage(encoded, null);
        }
    }

    /** Fixture: names an engine type. */
    static final class UsesTheEngine {
        boolean settled(IncomingDelivery delivery) {
            return delivery.isSettled();
        }
    }

    /** Fixture: reflects into a protonj2 class. */
    static final class PrivateLookup {
        Object lookup(Object delivery) throws Exception {
            return MethodHandles.privateLookupIn(delivery.getClass(), MethodHandles.lookup());
        }
    }

    /** Fixture: looks a protonj2 implementation class up by name, with no import to show for it. */
    static final class LookupByName {
        Object load() throws Exception {
            return Class.forName("org.apache.qpid.protonj2.engine.impl.ProtonEngine");
        }
    }

    /** Fixture: what the rest of the runtime may do. */
    static final class UsesTheClientApiOnly {
        Object body(org.apache.qpid.protonj2.client.Message<?> message) throws Exception {
            return message.body() + getClass().getSimpleName();
        }
    }

    @Test
    void theModuleDoesNotExportTheInternalPackage() throws IOException {
        ModuleDescriptor descriptor;
        try (InputStream in = Files.newInputStream(module.resolve("target/classes/module-info.class"))) {
            descriptor = ModuleDescriptor.read(in);
        }
        Set<String> exported = descriptor.exports().stream().map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(exported).contains(ROOT_PACKAGE).allSatisfy(p -> assertThat(p).doesNotContain(".internal"));
        Set<String> opened = descriptor.opens().stream().map(ModuleDescriptor.Opens::source)
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(opened).allSatisfy(p -> assertThat(p).doesNotContain(".internal"));
    }

    /** Users see the runtime's own types and the JDK's; protonj2 stays an implementation detail. */
    @Test
    void noPublicSignatureOfTheExportedPackagesNamesAProtonj2Type() {
        List<String> leaks = new ArrayList<>();
        for (JavaClass c : classes) {
            if (c.getPackageName().startsWith(INTERNAL_PACKAGE) || !visibleToUsers(c)) {
                continue;
            }
            Set<JavaClass> exposed = new TreeSet<>((a, b) -> a.getName().compareTo(b.getName()));
            c.getRawSuperclass().ifPresent(exposed::add);
            c.getRawInterfaces().forEach(exposed::add);
            for (JavaField f : c.getFields()) {
                if (visibleMember(f.getModifiers())) {
                    exposed.addAll(f.getType().getAllInvolvedRawTypes());
                }
            }
            for (JavaCodeUnit u : c.getCodeUnits()) {
                if (visibleMember(u.getModifiers())) {
                    exposed.addAll(u.getReturnType().getAllInvolvedRawTypes());
                    for (JavaType p : u.getParameterTypes()) {
                        exposed.addAll(p.getAllInvolvedRawTypes());
                    }
                    u.getThrowsClause().getTypes().forEach(exposed::add);
                }
            }
            exposed.stream().filter(t -> t.getPackageName().startsWith(PROTONJ2_PACKAGE))
                    .forEach(t -> leaks.add(c.getName() + " exposes " + t.getName()));
        }
        assertThat(leaks).as("protonj2 types in public signatures of the exported packages").isEmpty();
    }

    private static boolean visibleToUsers(JavaClass c) {
        for (JavaClass k = c; k != null; k = k.getEnclosingClass().orElse(null)) {
            if (!k.getModifiers().contains(JavaModifier.PUBLIC) || k.isAnonymousClass() || k.isLocalClass()) {
                return false;
            }
        }
        return true;
    }

    private static boolean visibleMember(Set<JavaModifier> modifiers) {
        return modifiers.contains(JavaModifier.PUBLIC) || modifiers.contains(JavaModifier.PROTECTED);
    }

    /** Assigns each runtime class to the slice of its top-level class, named by its package and simple name. */
    private static final class TopLevelClasses implements SliceAssignment {

        @Override
        public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
            String name = nameOf(javaClass);
            return name == null ? SliceIdentifier.ignore() : SliceIdentifier.of(name);
        }

        /** @return the class's top-level class, named relative to the root package; null if not the runtime's */
        static String nameOf(JavaClass javaClass) {
            JavaClass type = javaClass.getBaseComponentType(); // an array counts as its element type
            if (!type.getPackageName().startsWith(ROOT_PACKAGE)) {
                return null;
            }
            String name = type.getName();
            int nested = name.indexOf('$');
            String topLevel = nested < 0 ? name : name.substring(0, nested);
            if (topLevel.endsWith(".package-info") || topLevel.equals("module-info")) {
                return null;
            }
            return topLevel.substring(ROOT_PACKAGE.length() + 1);
        }

        @Override
        public String getDescription() {
            return "one slice per top-level class of " + ROOT_PACKAGE + " and its subpackages";
        }
    }
}
