"""The tool system and skills are plain Python: importing them loads neither agno nor nio."""

import json
import os
import subprocess
import sys


def test_tool_system_and_skills_import_neither_agno_nor_nio():
    code = (
        "import json, sys\n"
        "import mindroom.tool_system.catalog, mindroom.tool_system.calls, mindroom.plugins.skills\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)

    modules = json.loads(out.stdout)
    assert "mindroom.tool_system.catalog" in modules
    assert [m for m in modules if m.split(".")[0] in {"agno", "nio"}] == []
