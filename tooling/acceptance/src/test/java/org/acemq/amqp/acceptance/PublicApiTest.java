package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The public API of every published module is the one recorded in {@code api/baseline/<artifactId>.txt}: a change to
 * it (a type, constructor, method or field added, removed or changed in an exported package) fails the build until the
 * baseline is recorded again, so that it is a visible, reviewed diff. To record an intended change:
 * {@code mvn -pl tooling/acceptance -am verify -Dtest=PublicApiTest -Dacemq.api.record=true} (then add the change to
 * CHANGELOG.md).
 */
class PublicApiTest {

    static final String BASELINE_DIR = "api/baseline";

    @Test
    void everyPublishedModulesPublicApiIsTheRecordedOne() throws IOException {
        boolean record = Boolean.getBoolean("acemq.api.record");
        List<String> differences = new ArrayList<>();
        int modules = 0;
        for (Project.Module module : Project.publishedModules()) {
            if (!module.isJar()) {
                continue;
            }
            Path classes = module.dir().resolve("target/classes");
            List<String> actual = PublicApi.describe(classes);
            assertThat(actual).as("the public API of %s (built in %s)", module.artifactId(), classes).isNotEmpty();
            modules++;
            Path baseline = Project.file(BASELINE_DIR).resolve(module.artifactId() + ".txt");
            if (record) {
                Files.createDirectories(baseline.getParent());
                Files.write(baseline, actual, StandardCharsets.UTF_8);
                continue;
            }
            List<String> recorded = Files.isRegularFile(baseline) ? Files.readAllLines(baseline) : List.of();
            differences.addAll(diff(module.artifactId(), recorded, actual));
        }
        assertThat(modules).as("published jar modules").isGreaterThanOrEqualTo(7);
        assertThat(differences).as("changes to the public API that %s does not record; if they are intended, record "
                + "them with -Dacemq.api.record=true and add them to CHANGELOG.md", BASELINE_DIR).isEmpty();
    }

    /** @return "- line" for each recorded line no longer there and "+ line" for each new one */
    static List<String> diff(String module, List<String> recorded, List<String> actual) {
        Set<String> was = new LinkedHashSet<>(recorded);
        Set<String> is = new LinkedHashSet<>(actual);
        List<String> out = new ArrayList<>();
        for (String line : recorded) {
            if (!is.contains(line)) {
                out.add(module + ": - " + line);
            }
        }
        for (String line : actual) {
            if (!was.contains(line)) {
                out.add(module + ": + " + line);
            }
        }
        return out;
    }

    @Test
    void aChangedSignatureAnAddedMethodAndAnInternalClassAreToldApart(@TempDir Path dir) throws IOException {
        Path v1 = compile(dir.resolve("v1"), "public String name() { return null; }");
        Path v2 = compile(dir.resolve("v2"), "public CharSequence name() { return null; } public void more() { }");

        List<String> before = PublicApi.describe(v1);
        List<String> after = PublicApi.describe(v2);

        assertThat(before).contains("demo.api.Thing : class public final",
                "demo.api.Thing : public java.lang.String name()");
        assertThat(before).as("the unexported package is not API").noneMatch(l -> l.contains("demo.internal"));
        assertThat(before).as("package-private members are not API").noneMatch(l -> l.contains("hidden"));
        assertThat(diff("demo", before, after)).containsExactlyInAnyOrder(
                "demo: - demo.api.Thing : public java.lang.String name()",
                "demo: + demo.api.Thing : public java.lang.CharSequence name()",
                "demo: + demo.api.Thing : public void more()");
    }

    /** Compiles a tiny module: an exported package with one class holding {@code members}, and an internal one. */
    private static Path compile(Path dir, String members) throws IOException {
        Path src = dir.resolve("src");
        Path out = dir.resolve("classes");
        Files.createDirectories(src.resolve("demo/api"));
        Files.createDirectories(src.resolve("demo/internal"));
        Files.createDirectories(out);
        Files.writeString(src.resolve("module-info.java"), "module demo { exports demo.api; }");
        Files.writeString(src.resolve("demo/api/Thing.java"),
                "package demo.api; public final class Thing { " + members + " int hidden() { return 0; } }");
        Files.writeString(src.resolve("demo/internal/Impl.java"), "package demo.internal; public class Impl { }");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int rc = javac.run(null, null, null, "-d", out.toString(), src.resolve("module-info.java").toString(),
                src.resolve("demo/api/Thing.java").toString(), src.resolve("demo/internal/Impl.java").toString());
        assertThat(rc).as("javac").isZero();
        return out;
    }
}
