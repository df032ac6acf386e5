"""Plugin discovery imports every plugin's registering module (and, since the pipeline is named by its import path,
not the pipeline module): a slow import there slows every command's start."""

import json
import subprocess
import sys


def test_discovery_does_not_import_cn2an_or_dateparser_until_a_value_needs_them():
    code = ("import json, sys; from sectorflow import plugins; plugins.get_task('legal_extraction'); "
            "before = [m for m in ('cn2an', 'dateparser', 'sectorflow_legal_extraction.pipeline') if m in sys.modules]; "
            "from sectorflow_legal_extraction.normalize import amount_from_words; "
            "value = str(amount_from_words('壹佰万元整')); "
            "print(json.dumps({'before': before, 'value': value, 'after': 'cn2an' in sys.modules}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"before": [], "value": "1000000.00", "after": True}
