#!/usr/bin/env python3
"""Runs a tesselc kernel's LLVM IR on the CPU and compares its buffers with the
interpreter's (tessel-run) on the same inputs.

The NVPTX-targeted IR (tesselc --emit=llvm) is retargeted to the host and
linked with harness.cpp: one OS thread per GPU thread, CTA barriers and warp
shuffles through pthread barriers, shared memory through the GS segment
(addrspace(3) becomes x86's addrspace(256)), the predicated PTX accesses as
small IR functions (vector ones too), an inline register copy as its value,
ex2/lg2.approx as exp2f/log2f (.ftz flushing as the GPU does), %clock64 as
nanoseconds of a monotonic clock, and mma.sync and ldmatrix as
warp-synchronous exchanges of fragments and row addresses. Hopper's wgmma
(--target sm_90a) reads its shared operands through their matrix
descriptors as the PTX ISA lays them out, at issue; its fences and waits
pass the registers on. Warp-specialised kernels run as
they would: named barriers (bar.sync/bar.arrive with an id and a count)
count their threads, mbarrier arrivals complete phases, setmaxnreg does
nothing. This checks what the layouts and the lowering decide -- which
thread computes, exchanges and writes which element, where a descriptor
points -- not the NVPTX back end or the GPU's memory model.

  emulate.py --tools DIR --clang CLANG++ --work DIR FILE.tsl --kernel NAME
             [-D NAME=VALUE ...] [--target TARGET] --grid X[,Y[,Z]]
             --arg NAME=SPEC ...

SPEC is a scalar or TYPE[N][:rand|:randn|:fill=V|:zeros] as for tessel-run.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# NVVM intrinsics the lowering emits and what the harness or libm provides.
INTRINSICS = {
    "llvm.nvvm.read.ptx.sreg.tid.x": "emu_tid_x",
    "llvm.nvvm.read.ptx.sreg.ctaid.x": "emu_ctaid_x",
    "llvm.nvvm.read.ptx.sreg.ctaid.y": "emu_ctaid_y",
    "llvm.nvvm.read.ptx.sreg.ctaid.z": "emu_ctaid_z",
    "llvm.nvvm.read.ptx.sreg.nctaid.x": "emu_nctaid_x",
    "llvm.nvvm.read.ptx.sreg.nctaid.y": "emu_nctaid_y",
    "llvm.nvvm.read.ptx.sreg.nctaid.z": "emu_nctaid_z",
    "llvm.nvvm.read.ptx.sreg.clock64": "emu_clock64",
    "llvm.nvvm.barrier.cta.sync.aligned.all": "emu_barrier",
    "llvm.nvvm.cp.async.commit.group": "emu_async_commit",
    "llvm.nvvm.cp.async.wait.group": "emu_async_wait",
    "llvm.nvvm.shfl.sync.bfly.i32": "emu_shfl_bfly",
    "llvm.nvvm.shfl.sync.idx.i32": "emu_shfl_idx",
    "llvm.nvvm.fence.proxy.async.shared_cta": "emu_fence_proxy_async",
    "llvm.nvvm.wgmma.commit_group.sync.aligned": "emu_wgmma_commit",
    "llvm.nvvm.ex2.approx.f32": "exp2f",
    "llvm.nvvm.ex2.approx.ftz.f32": "emu_ex2_ftz",
    "llvm.nvvm.lg2.approx.f": "log2f",
    "llvm.nvvm.fence.mbarrier_init.release.cluster": "emu_fence_mbarrier_init",
    "llvm.nvvm.barrier.cta.sync.aligned.count": "emu_named_barrier_sync",
    "llvm.nvvm.setmaxnreg.inc.sync.aligned.u32": "emu_setmaxnreg_inc",
    "llvm.nvvm.setmaxnreg.dec.sync.aligned.u32": "emu_setmaxnreg_dec",
}
# Harness functions the IR wrappers below call.
HARNESS = {
    "emu_mma": "declare void @emu_mma(i32, i32, i32, i32, i32, i32, i32, ptr)",
    "emu_ldmatrix": "declare void @emu_ldmatrix(i32, i32, i64, ptr)",
    "emu_wgmma": "declare void @emu_wgmma(i32, i32, i32, i32, i64, ptr, i32, i64, i32, i32, ptr)",
    "emu_tma_load": "declare void @emu_tma_load(i64, i64, ptr, i32, i32, i32, i32, i32)",
    "emu_mbarrier_init": "declare void @emu_mbarrier_init(i64, i32)",
    "emu_mbarrier_arrive_expect_tx": "declare void @emu_mbarrier_arrive_expect_tx(i64, i32)",
    "emu_mbarrier_wait": "declare void @emu_mbarrier_wait(i64, i32)",
    "emu_mbarrier_arrive": "declare void @emu_mbarrier_arrive(i64)",
    "emu_named_barrier_arrive": "declare void @emu_named_barrier_arrive(i32, i32)",
}
# mma.sync m16n8k16 with f32 accumulation, by operand type: the intrinsic
# and the IR type of its operand registers. The harness's emu_mma takes the
# registers as i32 and C/D through memory, so each gets an IR wrapper.
MMA = {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32": ("f16", "<2 x half>"),
       "llvm.nvvm.mma.m16n8k16.row.col.bf16": ("bf16", "i32")}
LLVM_TYPES = {"ptr": "ptr addrspace(1)", "i32": "i32", "i64": "i64",
              "f32": "float", "f16": "half", "bf16": "bfloat", "tmap": "ptr"}
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 8}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-4000:]))
    return r.stdout


def predicated_access(text, functions):
    """An IR function doing what a predicated ld/st.global inline asm does."""
    if text in functions:
        return functions[text][0]
    if text == "mov.b32 $0, $1;":  # a copy LLVM does not hoist: the value
        name = "@emu_asm_%d" % len(functions)
        functions[text] = (name, "define internal i32 %s(i32 %%v) {\n  ret i32 %%v\n}\n" % name)
        return name
    if text == "bar.arrive $0, $1;":
        name = "@emu_asm_%d" % len(functions)
        functions[text] = (name, (
            "define internal void %s(i32 %%id, i32 %%n) {\n"
            "  call void @emu_named_barrier_arrive(i32 %%id, i32 %%n)\n  ret void\n}\n" % name))
        return name
    if "mbarrier.try_wait.parity" in text:
        name = "@emu_asm_%d" % len(functions)
        functions[text] = (name, (
            "define internal void %s(ptr addrspace(256) %%b, i32 %%p, i32 %%t) {\n"
            "  %%o = ptrtoint ptr addrspace(256) %%b to i64\n"
            "  call void @emu_mbarrier_wait(i64 %%o, i32 %%p)\n  ret void\n}\n" % name))
        return name
    copy = re.search(r"cp\.async\.(?:cg|ca)\.shared\.global \[ \$0 \], \[ \$1 \], (\d+), \$2;", text)
    if copy:
        return async_copy(text, int(copy.group(1)), text.startswith("@"), functions)
    reduction = re.search(r"red\.global\.add\.v(\d)\.f32", text)
    if reduction:
        return vector_reduction(int(reduction.group(1)), text.startswith("@"), functions, text)
    vector = re.search(r"(ld|st)\.global\.v(\d)\.b32", text)
    if vector:
        return vector_access(text, vector.group(1), int(vector.group(2)), functions)
    kind, mem = re.search(r"(ld|st)\.global\.(\w+)", text).groups()
    reg = {"b16": 16, "b32": 32, "b64": 64, "u8": 16}[mem]
    width = 8 if mem == "u8" else reg
    name = "@emu_asm_%d" % len(functions)
    if kind == "ld":
        value = "%v"
        body = "  %%v = load i%d, ptr addrspace(1) %%p\n" % width
        if width != reg:
            body += "  %%w = zext i%d %%v to i%d\n" % (width, reg)
            value = "%w"
        ir = ("define internal i%d %s(ptr addrspace(1) %%p, i1 %%m, i%d %%o) {\n"
              "  br i1 %%m, label %%do, label %%skip\ndo:\n%s  ret i%d %s\n"
              "skip:\n  ret i%d %%o\n}\n" % (reg, name, reg, body, reg, value, reg))
    else:
        value, body = "%v", ""
        if width != reg:
            body = "  %%t = trunc i%d %%v to i%d\n" % (reg, width)
            value = "%t"
        ir = ("define internal void %s(ptr addrspace(1) %%p, i%d %%v, i1 %%m) {\n"
              "  br i1 %%m, label %%do, label %%skip\ndo:\n%s"
              "  store i%d %s, ptr addrspace(1) %%p\n  ret void\nskip:\n  ret void\n}\n"
              % (name, reg, body, width, value))
    functions[text] = (name, ir)
    return name


def async_copy(text, size, predicated, functions):
    """An IR function doing what a cp.async does, at once: copy the first
    `srcsize` of `size` bytes and zero the rest (all skipped where the
    owner predicate is false)."""
    name = "@emu_asm_%d" % len(functions)
    params = "ptr addrspace(256) %d, ptr addrspace(1) %s, i32 %n" + (", i1 %p" if predicated else "")
    body = ("  %%z = icmp eq i32 %%n, 0\n  br i1 %%z, label %%zero, label %%copy\n"
            "copy:\n  %%v = load <%d x i8>, ptr addrspace(1) %%s, align 1\n"
            "  store <%d x i8> %%v, ptr addrspace(256) %%d, align 1\n  ret void\n"
            "zero:\n  store <%d x i8> zeroinitializer, ptr addrspace(256) %%d, align 1\n"
            "  ret void\n" % (size, size, size))
    entry = "  br i1 %p, label %go, label %skip\nskip:\n  ret void\ngo:\n" if predicated else ""
    functions[text] = (name, "define internal void %s(%s) {\n%s%s}\n" % (name, params, entry, body))
    return name


def vector_access(text, kind, n, functions):
    """An IR function doing what a predicated ld/st.global.vN.b32 does: the
    pointer, the predicate, then N words (the fallback of a load, the data
    of a store)."""
    name = "@emu_asm_%d" % len(functions)
    params = "ptr addrspace(1) %%p, i1 %%m, %s" % ", ".join("i32 %%w%d" % i for i in range(n))
    vec = "<%d x i32>" % n
    if kind == "ld":
        struct = "{ %s }" % ", ".join(["i32"] * n)
        loaded, fallback = ["  %%v = load %s, ptr addrspace(1) %%p, align 4" % vec], []
        for i in range(n):
            prev = "poison" if i == 0 else "%%l%d" % (i - 1)
            loaded += ["  %%e%d = extractelement %s %%v, i32 %d" % (i, vec, i),
                       "  %%l%d = insertvalue %s %s, i32 %%e%d, %d" % (i, struct, prev, i, i)]
            prev = "poison" if i == 0 else "%%f%d" % (i - 1)
            fallback.append("  %%f%d = insertvalue %s %s, i32 %%w%d, %d" % (i, struct, prev, i, i))
        ir = ("define internal %s %s(%s) {\n  br i1 %%m, label %%do, label %%skip\n"
              "do:\n%s\n  ret %s %%l%d\nskip:\n%s\n  ret %s %%f%d\n}\n"
              % (struct, name, params, "\n".join(loaded), struct, n - 1,
                 "\n".join(fallback), struct, n - 1))
    else:
        packed = []
        for i in range(n):
            prev = "poison" if i == 0 else "%%v%d" % (i - 1)
            packed.append("  %%v%d = insertelement %s %s, i32 %%w%d, i32 %d" % (i, vec, prev, i, i))
        ir = ("define internal void %s(%s) {\n  br i1 %%m, label %%do, label %%skip\n"
              "do:\n%s\n  store %s %%v%d, ptr addrspace(1) %%p, align 4\n  ret void\n"
              "skip:\n  ret void\n}\n" % (name, params, "\n".join(packed), vec, n - 1))
    functions[text] = (name, ir)
    return name


def vector_reduction(n, predicated, functions, text):
    """An IR function doing what a red.global.add.vN.f32 does: the pointer,
    the predicate if it has one, then N floats, each added atomically."""
    name = "@emu_asm_%d" % len(functions)
    params = "ptr addrspace(1) %%p, %s%s" % ("i1 %m, " if predicated else "",
                                           ", ".join("float %%x%d" % i for i in range(n)))
    adds = []
    for i in range(n):
        adds += ["  %%q%d = getelementptr float, ptr addrspace(1) %%p, i32 %d" % (i, i),
                 "  %%o%d = atomicrmw fadd ptr addrspace(1) %%q%d, float %%x%d monotonic"
                 % (i, i, i)]
    branch = "  br i1 %m, label %do, label %skip\n" if predicated else "  br label %do\n"
    functions[text] = (name, "define internal void %s(%s) {\n%sdo:\n%s\n  ret void\nskip:\n"
                             "  ret void\n}\n" % (name, params, branch, "\n".join(adds)))
    return name


def mma_wrapper(name, kind, reg):
    """An IR function with the intrinsic's signature calling emu_mma."""
    regs = ["a0", "a1", "a2", "a3", "b0", "b1"]
    params = ["%s %%%s" % (reg, r) for r in regs] + ["float %%c%d" % i for i in range(4)]
    body = ["  %d = alloca [4 x float]"]
    for i in range(4):
        body += ["  %%p%d = getelementptr float, ptr %%d, i32 %d" % (i, i),
                 "  store float %%c%d, ptr %%p%d" % (i, i)]
    body += ["  %%i%s = bitcast %s %%%s to i32" % (r, reg, r) for r in regs]
    body.append("  call void @emu_mma(i32 %d, %s, ptr %%d)" % (
        kind == "bf16", ", ".join("i32 %%i%s" % r for r in regs)))
    result = "poison"
    for i in range(4):
        body += ["  %%r%d = load float, ptr %%p%d" % (i, i),
                 "  %%s%d = insertvalue { float, float, float, float } %s, float %%r%d, %d"
                 % (i, result, i, i)]
        result = "%%s%d" % i
    body.append("  ret { float, float, float, float } %s" % result)
    return ("define internal { float, float, float, float } %s(%s) {\n%s\n}\n"
            % (name, ", ".join(params), "\n".join(body)))


# A call of a wgmma inline asm (the group's fence, a product, a wait): its
# result type, text and typed arguments (scalars only).
WGMMA_CALL = re.compile(r'call (\{[^}]*\}|\w+) asm sideeffect "([^"]*wgmma[^"]*)", "[^"]*"\(([^)]*)\)')


def wgmma_call(m, functions):
    """The call of an IR function doing what a wgmma inline asm does: a
    fence or a wait returns the registers it ties; a product calls
    emu_wgmma with the accumulators it ties through memory."""
    ret, text, args = m.groups()
    params = [a.rsplit(" ", 1) for a in args.split(", ")]
    types = [t for t, _ in params]
    key = (text, ret, tuple(types))
    if key not in functions:
        name = "@emu_asm_%d" % len(functions)
        formal = ["%s %%x%d" % (t, i) for i, t in enumerate(types)]
        product = re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(\w+)\.\w+ "
                            r"\{([^}]*)\}, (\{[^}]*\}|\$\d+), (\$\d+), p, 1, 1, (?:(\d), )?(\d);", text)
        if not product:
            # Tied registers in, the same registers out (a wait's untied
            # inputs after them, the A registers it keeps, only read).
            body, value = [], "%x0"
            if ret.startswith("{"):
                value = "poison"
                for i, t in enumerate(types[:len(ret.split(","))]):
                    body.append("  %%s%d = insertvalue %s %s, %s %%x%d, %d"
                                % (i, ret, value, t, i, i))
                    value = "%%s%d" % i
            body.append("  ret %s %s" % (ret, value))
        else:
            n, kind, d, a, b, trans_a, trans_b = product.groups()
            count = len(d.split(","))
            # Operand $i after the tied outputs is argument i - count.
            arg = lambda ref: "%%x%d" % (int(ref.strip("$ ")) - count)
            p = arg(re.search(r"setp\.ne\.b32 p, (\$\d+), 0", text).group(1))
            shared_a = not a.startswith("{")
            body = ["  %%d = alloca [%d x float]" % count, "  %regs = alloca [4 x i32]"]
            for i in range(count):
                body += ["  %%dp%d = getelementptr float, ptr %%d, i32 %d" % (i, i),
                         "  store float %%x%d, ptr %%dp%d" % (i, i)]
            if not shared_a:
                for i, ref in enumerate(a.strip("{}").split(",")):
                    body += ["  %%rp%d = getelementptr i32, ptr %%regs, i32 %d" % (i, i),
                             "  store i32 %s, ptr %%rp%d" % (arg(ref), i)]
            body.append("  call void @emu_wgmma(i32 %s, i32 %d, i32 %d, i32 %s, i64 %s, ptr %%regs, "
                        "i32 %s, i64 %s, i32 %s, ptr %%d)"
                        % (n, kind == "bf16", shared_a, trans_a or 0,
                           arg(a) if shared_a else "0", trans_b, arg(b), p))
            value = "poison"
            for i in range(count):
                body += ["  %%r%d = load float, ptr %%dp%d" % (i, i),
                         "  %%s%d = insertvalue %s %s, float %%r%d, %d" % (i, ret, value, i, i)]
                value = "%%s%d" % i
            body.append("  ret %s %s" % (ret, value))
        functions[key] = (name, "define internal %s %s(%s) {\n%s\n}\n"
                          % (ret, name, ", ".join(formal), "\n".join(body)))
    return "call %s %s(%s)" % (ret, functions[key][0], args)


LDMATRIX = re.compile(r"llvm\.nvvm\.ldmatrix\.sync\.aligned\.m8n8\.x([124])(\.trans)?\.b16(?:\.p3)?")


def ldmatrix_wrapper(name, num, trans):
    """An IR function with the intrinsic's signature calling emu_ldmatrix."""
    result = "i32" if num == 1 else "{ %s }" % ", ".join(["i32"] * num)
    body = ["  %%out = alloca [%d x i32]" % num,
            "  %offset = ptrtoint ptr addrspace(256) %p to i64",
            "  call void @emu_ldmatrix(i32 %d, i32 %d, i64 %%offset, ptr %%out)"
            % (num, trans)]
    value = "poison"
    for i in range(num):
        body += ["  %%q%d = getelementptr i32, ptr %%out, i32 %d" % (i, i),
                 "  %%r%d = load i32, ptr %%q%d" % (i, i)]
        if num == 1:
            value = "%r0"
        else:
            body.append("  %%s%d = insertvalue %s %s, i32 %%r%d, %d" % (i, result, value, i, i))
            value = "%%s%d" % i
    body.append("  ret %s %s" % (result, value))
    return ("define internal %s %s(ptr addrspace(256) %%p) {\n%s\n}\n"
            % (result, name, "\n".join(body)))


def tma_intrinsics(ll):
    """Bulk tensor copies and mbarrier intrinsics as calls of the harness,
    shared::cluster addresses (the CTA's own) as shared ones."""
    ll = re.sub(r"ptr addrspace\(7\) addrspacecast \((ptr addrspace\(3\) .*?) to ptr addrspace\(7\)\)",
                r"\1", ll)
    ll = re.sub(r"= addrspacecast (ptr addrspace\(3\) %[\w.]+) to ptr addrspace\(7\)",
                r"= getelementptr i8, \1, i64 0", ll)
    ll = ll.replace("addrspace(7)", "addrspace(3)")
    wrappers = []
    offset = "  %%%s = ptrtoint ptr addrspace(256) %%%s.p to i64\n"
    for rank in sorted(set(re.findall(r"@llvm\.nvvm\.cp\.async\.bulk\.tensor\.g2s\.tile\.(\d)d\(", ll))):
        rank = int(rank)
        intrinsic = "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.%dd" % rank
        name = "@emu_tma_%dd" % rank
        ll = re.sub(r"^declare .*@%s\(.*$" % re.escape(intrinsic), "", ll, flags=re.M)
        ll = ll.replace("@" + intrinsic + "(", name + "(")
        coords = ["i32 %%c%d" % i for i in range(rank)]
        wrappers.append(
            "define internal void %s(ptr addrspace(256) %%d.p, ptr addrspace(256) %%b.p, ptr %%t, "
            "%s, i16 %%m, i64 %%h, i1 %%fm, i1 %%fh, i32 %%g) {\n%s%s"
            "  call void @emu_tma_load(i64 %%d, i64 %%b, ptr %%t, %s)\n  ret void\n}\n"
            % (name, ", ".join(coords), offset % ("d", "d"), offset % ("b", "b"),
               ", ".join(coords + ["i32 0"] * (5 - rank))))
    for intrinsic, body in [
            ("llvm.nvvm.mbarrier.init.shared",
             ("void", "i32 %n", "  call void @emu_mbarrier_init(i64 %b, i32 %n)\n  ret void")),
            ("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta",
             ("i64", "i32 %n",
              "  call void @emu_mbarrier_arrive_expect_tx(i64 %b, i32 %n)\n  ret i64 0")),
            ("llvm.nvvm.mbarrier.arrive.shared",
             ("i64", "", "  call void @emu_mbarrier_arrive(i64 %b)\n  ret i64 0"))]:
        if "@" + intrinsic + "(" not in ll:
            continue
        name = "@emu_" + intrinsic.split(".", 2)[2].replace(".", "_")
        ll = re.sub(r"^declare .*@%s\(.*$" % re.escape(intrinsic), "", ll, flags=re.M)
        ll = ll.replace("@" + intrinsic + "(", name + "(")
        ret, params, code = body
        wrappers.append("define internal %s %s(ptr addrspace(256) %%b.p%s) {\n%s%s\n}\n"
                        % (ret, name, ", " + params if params else "", offset % ("b", "b"),
                           code))
    return ll, wrappers


def launch_value(text, values):
    """A bundle's launch expression (docs/bundle.md) over `values`."""
    python = re.sub(r"(?<![/])/(?![/])", "//", text)
    return int(eval(python, {"__builtins__": {}},
                    dict(values, cdiv=lambda a, b: -(-a // b), min=min, max=max)))


def host_ir(ll, kernel, kinds):
    """The kernel's IR for the host, with an entry taking an array of
    pointers to the arguments."""
    ll = "\n".join(l for l in ll.splitlines() if not l.startswith("target "))
    ll = ll.replace("define ptx_kernel", "define")
    for old, new in INTRINSICS.items():
        ll = ll.replace("@" + old + "(", "@" + new + "(")
    # Constant-operand markers of intrinsics are invalid on plain functions.
    ll = ll.replace(" immarg", "")
    wrappers = []
    for intrinsic, (kind, reg) in MMA.items():
        if "@" + intrinsic + "(" not in ll:
            continue
        name = "@emu_mma_" + kind
        ll = re.sub(r"^declare .*@%s\(.*$" % re.escape(intrinsic), "", ll, flags=re.M)
        ll = ll.replace("@" + intrinsic + "(", name + "(")
        wrappers.append(mma_wrapper(name, kind, reg))
    for intrinsic in sorted(set(m.group(0) for m in LDMATRIX.finditer(ll))):
        num, trans = LDMATRIX.fullmatch(intrinsic).groups()
        name = "@emu_ldmatrix_x%s%s" % (num, "_trans" if trans else "")
        ll = re.sub(r"^declare .*@%s\(.*$" % re.escape(intrinsic), "", ll, flags=re.M)
        ll = ll.replace("@" + intrinsic + "(", name + "(")
        wrappers.append(ldmatrix_wrapper(name, int(num), bool(trans)))
    ll, tma = tma_intrinsics(ll)
    wrappers += tma
    ll = re.sub(r"^@tessel_smem = .*$", "", ll, flags=re.M)
    ll = ll.replace("addrspace(3) @tessel_smem", "addrspace(3) null")
    ll = ll.replace("addrspace(3)", "addrspace(256)")
    functions = {}
    ll = WGMMA_CALL.sub(lambda m: wgmma_call(m, functions), ll)
    ll = re.sub(r'asm sideeffect "([^"]*)", "[^"]*"',
                lambda m: predicated_access(m.group(1), functions), ll)
    left = set(re.findall(r"@llvm\.nvvm\.[\w.]+", ll)) | set(re.findall(r"\basm\b", ll))
    if left:
        sys.exit("cannot emulate: %s" % sorted(left))
    entry = ["define void @emu_entry(ptr %args) {"]
    for i, kind in enumerate(kinds):
        entry += ["  %%a%d = getelementptr ptr, ptr %%args, i64 %d" % (i, i),
                  "  %%p%d = load ptr, ptr %%a%d" % (i, i),
                  "  %%v%d = load %s, ptr %%p%d" % (i, LLVM_TYPES[kind], i)]
    # A tensor map goes by value, as the kernel's parameter says.
    passed = {"tmap": "ptr byval([128 x i8]) align 64"}
    entry += ["  call void @%s(%s)" % (kernel, ", ".join(
        "%s %%v%d" % (passed.get(k, LLVM_TYPES[k]), i) for i, k in enumerate(kinds))),
        "  ret void", "}"]
    helpers = "".join(ir for _, ir in functions.values()) + "".join(wrappers)
    declares = [d for name, d in HARNESS.items() if "@%s(" % name in helpers]
    return (ll + "\n" + "\n".join(declares) + "\n" + helpers
            + "\n".join(entry) + "\n")


def inputs(spec, rng):
    """(type, values) of a buffer SPEC, or None for a scalar."""
    m = re.match(r"(\w+)\[(\d+)\](?::(\w+)(?:=(.*))?)?$", spec)
    if not m:
        return None
    ty, n, init, value = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if init == "rand":
        return ty, rng.uniform(-1, 1, n)
    if init == "randn":
        return ty, rng.standard_normal(n)
    if init == "fill":
        return ty, np.full(n, float(value))
    return ty, np.zeros(n)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--tools", required=True)
    p.add_argument("--clang", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("-D", action="append", default=[])
    p.add_argument("--target", help="tesselc's --target (the interpreter has none)")
    p.add_argument("--grid", default="1")
    p.add_argument("--arg", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=2e-2,
                   help="absolute and relative tolerance")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path = lambda name: os.path.join(a.work, name)
    tesselc = [os.path.join(a.tools, "tesselc"), a.file, "--kernel", a.kernel]
    tesselc += sum([["-D", d] for d in a.D], [])
    if a.target:
        tesselc += ["--target", a.target]

    k = json.loads(run(tesselc + ["--emit=bundle"]))["kernels"][0]
    kinds = [q["kind"] for q in k["params"]]
    maps = k.get("tensor_maps", [])
    kinds += ["tmap"] * len(maps)
    persistent = k["launch"]["kind"] == "persistent"
    workspace = 0
    if persistent and "workspace_bytes" in k["launch"]:
        workspace = int(k["launch"]["workspace_bytes"].split("*")[0])
        kinds.append("ptr")
    with open(path("kernel.ll"), "w") as f:
        f.write(host_ir(run(tesselc + ["--emit=llvm"]), k["ptx_entry"], kinds))
    run([a.clang, "-O1", "-w", os.path.join(HERE, "harness.cpp"), path("kernel.ll"),
         "-o", path("kernel"), "-lpthread", "-lm"])

    grid = [int(x) for x in a.grid.split(",")] + [1, 1]
    spec = ["%d %d %d %d %d %d %d" % (k["num_warps"], grid[0], grid[1], grid[2],
                                      persistent, workspace, k["shared_bytes"])]
    rng = np.random.default_rng(a.seed)
    specs = dict(s.split("=", 1) for s in a.arg)
    interp = [os.path.join(a.tools, "tessel-run"), a.file, "--kernel", a.kernel,
              "--grid", a.grid] + sum([["-D", d] for d in a.D], [])
    buffers = []
    for q in k["params"]:
        name, s = q["name"], specs[q["name"]]
        buf = inputs(s, rng)
        if buf is None:
            spec.append("%s %s" % (q["kind"], s))
            interp += ["--arg", "%s=%s" % (name, s)]
            continue
        ty, values = buf
        values.tofile(path(name + ".in"))
        spec.append("ptr %s %d %s %s" % (ty, len(values), path(name + ".in"), path(name + ".emu")))
        interp += ["--arg", "%s=%s[%d]:file=%s" % (name, ty, len(values), path(name + ".in")),
                   "--save", "%s=%s" % (name, path(name + ".ref"))]
        buffers.append(name)
    values = dict(k.get("constants", {}))
    values.update((q["name"], int(specs[q["name"]])) for q in k["params"]
                  if q["kind"] in ("i32", "i64"))
    values.update(zip(("grid_x", "grid_y", "grid_z"), grid))
    names = [q["name"] for q in k["params"]]
    for m in maps:
        elem = ELEMENT_BYTES[k["params"][names.index(m["param"])]["elem"]]
        dims = [max(1, launch_value(d, values)) for d in m["dims"]]
        strides = [launch_value(d, values) * elem for d in m["strides"]]
        spec.append("tmap %d %d %d %d %s" % (
            names.index(m["param"]), len(dims), elem, m["swizzle"],
            " ".join(map(str, dims + strides + m["box"]))))
    with open(path("spec"), "w") as f:
        f.write("\n".join(spec) + "\n")
    run([path("kernel"), path("spec")])
    run(interp)

    ok = True
    for name in buffers:
        ref, emu = np.fromfile(path(name + ".ref")), np.fromfile(path(name + ".emu"))
        same = (np.isnan(ref) & np.isnan(emu)) | (ref == emu)
        with np.errstate(invalid="ignore"):
            err = np.where(same, 0.0, np.abs(ref - emu))
            bad = ~(err <= a.tol * (1 + np.where(np.isfinite(ref), np.abs(ref), 0)))
        print("%s %s: %d elements, %d written, max error %.3g, %d wrong"
              % (a.kernel, name, len(ref), np.count_nonzero(ref), err.max(), bad.sum()))
        if bad.any():
            ok = False
            i = np.flatnonzero(bad)[:5]
            print("  at %s: interpreter %s, emulated %s" % (i, ref[i], emu[i]))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
