package org.acemq.amqp.acceptance;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * A module's public API as text, one line per type and per member, sorted, so that two versions differ exactly where
 * the API does: every public or protected type of a package its {@code module-info} exports (to everyone), with its
 * kind, modifiers and supertypes, and each of its public or protected constructors, methods and fields with their
 * parameter, return and field types. Read from the class files with ArchUnit (nothing is loaded).
 */
final class PublicApi {

    private PublicApi() {
    }

    /**
     * @param classes a module's compiled classes; with a {@code module-info.class} its exported packages are the API,
     *     without one (an automatic module) every package whose name has no {@code internal} segment
     * @return its public API, one line each, sorted
     */
    static List<String> describe(Path classes) {
        Path descriptor = classes.resolve("module-info.class");
        JavaClasses all = new ClassFileImporter().importPath(classes);
        Set<String> exported;
        if (Files.isRegularFile(descriptor)) {
            try (InputStream in = Files.newInputStream(descriptor)) {
                exported = ModuleDescriptor.read(in).exports().stream().filter(e -> !e.isQualified())
                        .map(ModuleDescriptor.Exports::source).collect(Collectors.toSet());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + descriptor, e);
            }
        } else {
            exported = all.stream().map(JavaClass::getPackageName)
                    .filter(p -> !p.matches("(.*\\.)?internal(\\..*)?")).collect(Collectors.toSet());
        }
        TreeSet<String> lines = new TreeSet<>();
        for (JavaClass c : all) {
            if (!exported.contains(c.getPackageName()) || !visible(c)) {
                continue;
            }
            String type = c.getName();
            lines.add(type + " : " + kind(c) + modifiers(c.getModifiers()) + supertypes(c));
            for (JavaCodeUnit unit : c.getCodeUnits()) {
                if (visible(unit.getModifiers()) && !unit.getModifiers().contains(JavaModifier.SYNTHETIC)
                        && !unit.getModifiers().contains(JavaModifier.BRIDGE)) {
                    lines.add(type + " : " + modifiers(unit.getModifiers()).strip() + " "
                            + (unit.isConstructor() ? "<init>" : unit.getRawReturnType().getName() + " "
                                    + unit.getName())
                            + "(" + unit.getRawParameterTypes().stream().map(JavaType::getName)
                                    .collect(Collectors.joining(", ")) + ")"
                            + throwsClause(unit));
                }
            }
            for (JavaField f : c.getFields()) {
                if (visible(f.getModifiers()) && !f.getModifiers().contains(JavaModifier.SYNTHETIC)) {
                    lines.add(type + " : " + modifiers(f.getModifiers()).strip() + " field "
                            + f.getRawType().getName() + " " + f.getName());
                }
            }
        }
        return new ArrayList<>(lines);
    }

    private static boolean visible(JavaClass c) {
        if (!visible(c.getModifiers()) || c.isAnonymousClass() || c.isLocalClass()) {
            return false;
        }
        return c.getEnclosingClass().map(PublicApi::visible).orElse(true);
    }

    private static boolean visible(Set<JavaModifier> modifiers) {
        return modifiers.contains(JavaModifier.PUBLIC) || modifiers.contains(JavaModifier.PROTECTED);
    }

    private static String kind(JavaClass c) {
        if (c.isAnnotation()) {
            return "annotation";
        }
        if (c.isInterface()) {
            return "interface";
        }
        if (c.isEnum()) {
            return "enum";
        }
        if (c.isRecord()) {
            return "record";
        }
        return "class";
    }

    private static String modifiers(Set<JavaModifier> modifiers) {
        StringBuilder b = new StringBuilder();
        for (JavaModifier m : List.of(JavaModifier.PUBLIC, JavaModifier.PROTECTED, JavaModifier.ABSTRACT,
                JavaModifier.STATIC, JavaModifier.FINAL)) {
            if (modifiers.contains(m)) {
                b.append(' ').append(m.name().toLowerCase(java.util.Locale.ROOT));
            }
        }
        return b.toString();
    }

    private static String supertypes(JavaClass c) {
        StringBuilder b = new StringBuilder();
        c.getRawSuperclass().filter(s -> !s.getName().equals("java.lang.Object") && !s.getName().equals("java.lang.Enum")
                && !s.getName().equals("java.lang.Record")).ifPresent(s -> b.append(" extends ").append(s.getName()));
        String interfaces = c.getRawInterfaces().stream().map(JavaClass::getName).sorted()
                .collect(Collectors.joining(", "));
        if (!interfaces.isEmpty()) {
            b.append(c.isInterface() ? " extends " : " implements ").append(interfaces);
        }
        return b.toString();
    }

    private static String throwsClause(JavaCodeUnit unit) {
        String thrown = unit.getThrowsClause().getTypes().stream().map(JavaClass::getName).sorted()
                .collect(Collectors.joining(", "));
        return thrown.isEmpty() ? "" : " throws " + thrown;
    }
}
