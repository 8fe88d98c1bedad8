/**
 * Every module a TypeScript file loads, however it is written, for the
 * import checks of sandbox.test.ts and shape.test.ts: `import` and
 * `export … from` statements, `import x = require('…')`, and `require(…)` /
 * `import(…)` calls anywhere in the code. Read from the syntax tree, so
 * comments and spacing inside `require( )` hide nothing, and type
 * positions (`typeof import('…')`) count for nothing.
 */
import ts from 'typescript';

export interface ModuleImport {
  /** The specifier; null when the code computes it (`import(name)`), so no one can tell what it loads. */
  spec: string | null;
  /** Erased at build time (`import type`, `import { type A }`, `export type … from`): loads nothing in the sandbox. */
  typeOnly: boolean;
}

/** All named bindings are `type` ones, and there is at least one (`import {} from` loads the module). */
function allTypeSpecifiers(elements: ts.NodeArray<ts.ImportSpecifier | ts.ExportSpecifier> | undefined): boolean {
  return !!elements && elements.length > 0 && elements.every((e) => e.isTypeOnly);
}

function literalText(node: ts.Node | undefined): string | null {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : null;
}

export function moduleImports(source: ts.SourceFile): ModuleImport[] {
  const out: ModuleImport[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const typeOnly = !!clause?.isTypeOnly || (!clause?.name && !!named && ts.isNamedImports(named) && allTypeSpecifiers(named.elements));
      out.push({ spec: literalText(node.moduleSpecifier), typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const named = node.exportClause;
      const typeOnly = node.isTypeOnly || (!!named && ts.isNamedExports(named) && allTypeSpecifiers(named.elements));
      out.push({ spec: literalText(node.moduleSpecifier), typeOnly });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      out.push({ spec: literalText(node.moduleReference.expression), typeOnly: node.isTypeOnly });
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      out.push({ spec: literalText(node.arguments[0]), typeOnly: false });
    }
    // Types load nothing (`typeof import('…')`, `import('…').T`).
    if (!ts.isTypeNode(node)) ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}
