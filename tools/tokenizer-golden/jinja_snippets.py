#!/usr/bin/python3
"""Expected output of small Jinja2 templates, one feature each, for our interpreter's conformance.

Same environment as chat_templates.py (transformers' settings); run with Debian's python3-jinja2:
    /usr/bin/python3 tools/tokenizer-golden/jinja_snippets.py [out-file]
Each case: template, vars, and the expected output or the error Python Jinja2 raised.
"""
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_templates import REPO, environment  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    REPO, "cluster-node/src/test/resources/dev/troupe/engine/template/golden-jinja-snippets.json")

MSGS = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi 😀"},
        {"role": "assistant", "content": "Yo", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}]
V = {"messages": MSGS, "s": "  Hello, World  ", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, 2], "items": "x"},
     "e": [], "none": None, "t": True, "u": "日本語😀ab", "nested": {"x": {"y": {"z": "deep"}}}}

SNIPPETS = [
    # printing and reprs
    "{{ 1 }}|{{ -3 }}|{{ 2.5 }}|{{ 1.0 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 123456789.125 }}|{{ 0.1 + 0.2 }}",
    "{{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ [] }}|{{ {} }}|{{ () }}|{{ (1,) }}|{{ (1, 'a') }}",
    "{{ l }}|{{ d }}|{{ messages[2] }}|{{ ['it\\'s', \"q\\\"d\", 'back\\\\slash', 'nl\\n'] }}",
    "{{ s }}|{{ u }}|{{ undefined_var }}|{{ nested.x }}",
    "{{ 10 / 4 }}|{{ 10 // 4 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 8 }}|{{ 7.5 // 2 }}|{{ 1 + 2 * 3 - 4 }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ [1] }}|{{ 'ab' * 3 }}|{{ [1] + [2, 3] }}|{{ 'x' + 'y' }}",
    # comparisons, logic
    "{{ 1 == 1.0 }}|{{ 1 < 2 < 3 }}|{{ 'a' < 'b' }}|{{ [1,2] == [1,2] }}|{{ none == none }}|{{ 1 != 2 }}|{{ t == 1 }}",
    "{{ 'b' in 'abc' }}|{{ 2 in l }}|{{ 'a' in d }}|{{ 'z' not in d }}|{{ 5 not in l }}",
    "{{ n > 5 and 'big' or 'small' }}|{{ 0 or none or 'x' }}|{{ '' and 1 }}|{{ not e }}|{{ not none is none }}",
    "{{ 'yes' if t else 'no' }}|{{ 'yes' if e else 'no' }}|{{ 'only' if e }}|",
    "{% if not undefined_var is defined %}nd{% endif %}|{% if undefined_var is not defined %}nd2{% endif %}",
    # tests
    "{{ none is none }}{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ 's' is string }}{{ d is mapping }}{{ l is sequence }}",
    "{{ 's' is iterable }}{{ 1 is iterable }}{{ d is iterable }}{{ t is true }}{{ t is false }}{{ t is boolean }}{{ n is odd }}{{ n is even }}",
    "{{ n is divisibleby 7 }}{{ n is divisibleby(3) }}{{ 3 is equalto 3 }}{{ 'a' is eq 'a' }}{{ 2 is in l }}{{ 'abc' is lower }}{{ 'ABC' is upper }}",
    "{{ messages is defined }}{{ messages[5] is defined }}{{ d.zz is defined }}{{ none is defined }}{{ x is undefined }}",
    # filters
    "{{ s | trim }}|{{ 'xxhixx' | trim('x') }}|{{ s | length }}|{{ u | length }}|{{ l | length }}|{{ d | count }}",
    "{{ 'abc' | list }}|{{ d | list }}|{{ l | join(', ') }}|{{ l | join }}|{{ messages | map(attribute='role') | join('/') }}",
    "{{ undefined_var | default('dflt') }}|{{ '' | default('e', true) }}|{{ none | default('n') }}|{{ 0 | d(5, boolean=true) }}",
    "{{ d | items | list }}|{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d.items() %}{{ k }}{% endfor %}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}|{{ messages | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }}",
    "{{ messages | selectattr('tool_calls') | list | length }}|{{ messages | selectattr('tool_calls', 'defined') | map(attribute='role') | first }}",
    "{{ 'Hello' | upper }}|{{ 'Hello' | lower }}|{{ 'hello world' | title }}|{{ 'hello WORLD' | capitalize }}|{{ 'a-b-c' | replace('-', '+') }}",
    "{{ l | first }}|{{ l | last }}|{{ 'abc' | first }}|{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ l | reverse | list }}|{{ 'abc' | reverse }}",
    "{{ 42 | string }}|{{ '42' | int + 1 }}|{{ 'x' | int }}|{{ '2.5' | float }}|{{ 3 | float }}|{{ -3 | abs }}|{{ 2.567 | round(2) }}|{{ 2.5 | round }}",
    "{{ [1, 2, 2, 3, 1] | unique | list }}|{{ l | sum }}|{{ l | min }}|{{ l | max }}|{{ [[1], [2]] | map('length') | list }}",
    "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, first=true) }}|{{ 'one two  three' | wordcount }}",
    "{{ d | tojson }}|{{ messages[2] | tojson }}|{{ 'é😀\"\\\\\\n' | tojson }}|{{ [1.0, 1e-7, none, true] | tojson }}",
    "{{ d | tojson(indent=2) }}|{{ {'a': {}, 'b': []} | tojson(indent=4) }}|{{ l | tojson(indent=2) }}",
    "{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ {1: 'int key', none: 0} | tojson }}",
    "{{ d | dictsort }}|{{ 'safe<>' | safe }}",
    # str methods
    "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ '--x--'.strip('-') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'ab'.rstrip('xb') }}",
    "{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'x</think>y</think>z'.split('</think>')[-1] }}|{{ 'a,b,c'.rsplit(',', 1) }}",
    "{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith('bc') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abcabc'.replace('b', 'B') }}|{{ 'abcabc'.replace('b', 'B', 1) }}",
    "{{ 'Hello'.upper() }}|{{ 'Hello'.lower() }}|{{ 'hello there'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'abcb'.find('b') }}|{{ 'abcb'.count('b') }}",
    "{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{name}'.format('a', name='b') }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\\nb'.splitlines() }}|{{ '123'.isdigit() }}",
    "{{ d.get('b') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz') }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d['items'] }}|{{ d.items is defined }}",
    # slicing and indexing
    "{{ l[0] }}|{{ l[-1] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[5:] }}|{{ l[-2::-1] }}",
    "{{ u[0] }}|{{ u[-1] }}|{{ u[1:4] }}|{{ u[::-1] }}|{{ 'abcdef'[1:5:2] }}|{{ messages[-1].role }}|{{ messages[0]['content'] }}",
    "{{ nested.x.y.z }}|{{ nested['x']['y'].z }}|{{ messages[2].tool_calls[0].function.arguments.a }}",
    # statements
    "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}",
    "{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }};{% endfor %}",
    "{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}|{% for x in e %}x{% else %}empty{% endfor %}|{% for c in 'ab' %}{{ c }}{% endfor %}",
    "{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for m in messages %}{{ loop.cycle('odd', 'even') }}{% endfor %}|{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    "{% set x = 1 %}{% for i in l %}{% set x = i %}{{ x }}{% endfor %}|{{ x }}",
    "{% set ns = namespace(found=false, n=0) %}{% for i in l %}{% if i > 2 %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.found }}{{ ns.n }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set c = (3, 4) %}{{ c[1] }}|{% set blk %}in {{ n }} block{% endset %}{{ blk | upper }}",
    "{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}|{% if e %}x{% elif none %}y{% endif %}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }} {{ greet(name='Z') }}",
    "{% filter upper %}shout {{ n }}{% endfilter %}",
    "{{ range(3) | list }}|{{ range(1, 7, 2) | list }}|{% for i in range(2) %}{{ i }}{% endfor %}|{{ dict(a=1) }}",
    "{{ raise_exception is defined }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %b %B %a %A %d %j %y %p %I') }}",
    # whitespace control
    "a\n  {% if t %}\n  b\n  {% endif %}\nc\n",
    "a  {%- if t -%}  b  {%- endif -%}  c",
    "  {{- 'x' -}}  \n  y",
    "{% for i in l %}\n  {{ i }}\n{% endfor %}\n",
    "x {# comment #} y\n  {#- trimmed -#}  z\n  {# own line #}\nw",
    "{%+ if t %}keep{% endif %}\n  {%+ if t %}plus{% endif %}",
    "line1\r\nline2{% if t %}\r\n  yes\r\n{% endif %}\r\n",
    "{{ 'a' }}\n{{ 'b' }}\n",
    "{% if t %}  \n{% endif %}tail",
    "{{ '{{' }} {{ '}}' }} {{ {'a': {'b': 1}} }}",
    # errors that must stay errors
    "{{ undefined_var.attr }}",
    "{{ 'a' + 1 }}",
    "{{ l.append(4) }}",
    "{{ raise_exception('custom failure') }}",
    "{% if %}",
    "{% for x in none %}{% endfor %}",
    "{{ d | items | unknown_filter }}",
    "{{ 1 / 0 }}",
    "{{ undefined_var + 1 }}",
    "{% set ns = namespace() %}{% set l.x = 1 %}",
    "{{ none.attr }}",
]


def main():
    env = environment()
    cases = []
    for template in SNIPPETS:
        entry = {"template": template}
        try:
            entry["expected"] = env.from_string(template).render(**V)
        except Exception as e:
            entry["error"] = "%s: %s" % (type(e).__name__, e)
        cases.append(entry)
    out = {"origin": "tools/tokenizer-golden/jinja_snippets.py: Python Jinja2 %s (Debian python3-jinja2) "
                     "configured as transformers' _compile_jinja_template" % jinja2.__version__,
           "vars": V, "cases": cases}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%s: %d snippets, %d errors" % (OUT, len(cases), sum("error" in c for c in cases)))


if __name__ == "__main__":
    main()
