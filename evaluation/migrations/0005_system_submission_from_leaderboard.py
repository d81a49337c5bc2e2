"""System and Submission move from `leaderboard` to `evaluation` (docs/architecture.md): state
only, the rows stay where they are. 0006 then renames the tables to evaluation's names."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import evaluation.models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0004_llm_cache_and_debate'),
        ('leaderboard', '0003_baseline_submissions_public'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Submission',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('uuid', models.UUIDField(editable=False, unique=True)),
                        ('protocol', models.CharField(choices=[('turn', 'Turn'), ('log', 'Log')], max_length=10)),
                        ('file', models.FileField(upload_to=evaluation.models.submission_upload_path)),
                        ('line_count', models.PositiveIntegerField(default=0)),
                        ('note', models.CharField(blank=True, max_length=300)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('is_public', models.BooleanField(default=False, help_text="published by the system's owner")),
                        ('benchmark', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='evaluation.benchmark')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'ordering': ['-created_at'],
                        'db_table': 'leaderboard_submission',
                    },
                ),
                migrations.AlterField(
                    model_name='run',
                    name='submission',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='evaluation.submission'),
                ),
                migrations.CreateModel(
                    name='System',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('slug', models.SlugField(max_length=100, unique=True)),
                        ('name', models.CharField(max_length=200)),
                        ('description', models.TextField(blank=True)),
                        ('paper_url', models.URLField(blank=True)),
                        ('code_url', models.URLField(blank=True)),
                        ('team', models.CharField(blank=True, max_length=200)),
                        ('family', models.CharField(blank=True, help_text='e.g. retrieval, dense, LLM, planning, hybrid', max_length=50)),
                        ('is_baseline', models.BooleanField(default=False, help_text='a reference baseline shipped with Concord')),
                        ('daily_quota', models.PositiveIntegerField(blank=True, help_text='accepted uploads per UTC day; empty: the site default (CONCORD_DAILY_SUBMISSION_QUOTA)', null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('owner', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='systems', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'ordering': ['name'],
                        'db_table': 'leaderboard_system',
                    },
                ),
                migrations.AddField(
                    model_name='submission',
                    name='system',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='evaluation.system'),
                ),
                migrations.AddIndex(
                    model_name='submission',
                    index=models.Index(fields=['system', 'created_at'], name='submission_quota_idx'),
                ),
                migrations.AddConstraint(
                    model_name='submission',
                    constraint=models.CheckConstraint(condition=models.Q(('protocol__in', ['turn', 'log'])), name='submission_protocol'),
                ),
            ],
        ),
    ]
