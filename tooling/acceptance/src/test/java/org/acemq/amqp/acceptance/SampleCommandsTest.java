package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The one-command runs the README and the guides give ({@code mvn -q -pl <module> -am package -DskipTests && java -jar
 * <jar>}) name a module the samples' parent lists and the jar that module's build writes, so that moving or renaming a
 * sample cannot leave a command that fails in a fresh clone. What the jar then does is the samples' own tests'
 * business.
 */
class SampleCommandsTest {

    private static final Pattern COMMAND = Pattern.compile(
            "mvn -q -pl ([^\\s`]+) -am package -DskipTests && java -jar ([^\\s`]+)");
    private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
    private static final Pattern SHADED = Pattern.compile(
            "<outputFile>\\$\\{project\\.build\\.directory}/([^<]+)</outputFile>");
    private static final Pattern FINAL_NAME = Pattern.compile("<finalName>([^<]+)</finalName>");

    @Test
    void everySampleCommandBuildsAModuleOfTheSamplesParentAndRunsTheJarItWrites() throws IOException {
        List<String> samples = new ArrayList<>();
        Matcher modules = MODULE.matcher(Project.read("samples/pom.xml"));
        while (modules.find()) {
            samples.add("samples/" + modules.group(1).trim());
        }
        assertThat(samples).as("modules of samples/pom.xml").contains("samples/plain", "samples/two-services",
                "samples/spring-boot");

        List<String> checked = new ArrayList<>();
        for (String file : markdownFiles()) {
            Matcher m = COMMAND.matcher(Project.read(file));
            while (m.find()) {
                String module = m.group(1);
                String jar = m.group(2);
                assertThat(samples).as("%s: -pl %s is a module of samples/pom.xml", file, module).contains(module);
                assertThat(jar).as("%s: the jar is in %s/target", file, module).startsWith(module + "/target/");
                assertThat(jar.substring((module + "/target/").length()))
                        .as("%s: the jar %s is the one %s/pom.xml writes", file, jar, module)
                        .isEqualTo(jarName(Project.readPom(Project.file(module))));
                checked.add(file + ": " + module);
            }
        }
        System.out.println("sample commands checked: " + checked);
        assertThat(checked).as("sample commands in the README").anyMatch(c -> c.startsWith("README.md: samples/plain"));
        assertThat(checked).as("a command for every sample").extracting(c -> c.substring(c.indexOf(": ") + 2))
                .containsAll(samples);
    }

    /** @return the executable jar's file name: the shade plugin's outputFile, else the finalName's jar */
    private static String jarName(String pom) {
        Matcher shaded = SHADED.matcher(pom);
        if (shaded.find()) {
            return shaded.group(1);
        }
        Matcher finalName = FINAL_NAME.matcher(pom);
        assertThat(finalName.find()).as("the sample's POM names its executable jar (outputFile or finalName)")
                .isTrue();
        return finalName.group(1) + ".jar";
    }

    private static List<String> markdownFiles() throws IOException {
        List<String> files = new ArrayList<>(List.of("README.md"));
        try (Stream<Path> docs = Files.list(Project.file("docs"))) {
            docs.filter(p -> p.getFileName().toString().endsWith(".md")).sorted()
                    .forEach(p -> files.add("docs/" + p.getFileName()));
        }
        return files;
    }
}
